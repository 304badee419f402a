package transport

import (
	"fmt"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wire"
)

// Frame types of the peer protocol. The client protocol (impl/server) uses
// types from 16 up, so a client that dials the peer port, or a peer that
// dials a client port, is refused at its first frame.
const (
	FrameHello    uint8 = 1 // dialer -> acceptor: who I am, whom I dialled
	FrameAck      uint8 = 2 // acceptor -> dialer: accepted, and who I am
	FrameRefuse   uint8 = 3 // acceptor -> dialer: refused, and why; then close
	FrameMessages uint8 = 4 // dialer -> acceptor: a batch of messages
	// FrameClock: dialer -> acceptor, the sender's logical clock (u64)
	// when the Messages frames that follow it left (Config.Clock); sent
	// only by a node whose trace is on.
	FrameClock uint8 = 5
)

// clockPayloadBytes is a Clock frame's payload: one u64.
const clockPayloadBytes = 8

// Limits on what a message may carry, checked before anything is sliced.
type Limits struct {
	// EntriesMax bounds the records of one AppendEntries.
	EntriesMax int
	// EntryBytesMax bounds one entry's data (the WAL's EntryBytesMax).
	EntryBytesMax int
	// ChunkBytesMax bounds the data of one snapshot chunk (0: 1 MiB).
	ChunkBytesMax int
}

// DefaultLimits are generous against the core's defaults (256 entries and
// 1 MiB per AppendEntries, 1 MiB per entry, chunks of 64 KiB).
var DefaultLimits = Limits{EntriesMax: 1 << 14, EntryBytesMax: 1 << 20, ChunkBytesMax: 1 << 20}

func (l Limits) chunkBytesMax() int {
	if l.ChunkBytesMax <= 0 {
		return 1 << 20
	}
	return l.ChunkBytesMax
}

// headerBytesMax bounds the encoding of a core message without entries
// (3 bytes, 15 uvarints of at most 10 bytes, a checksum).
const headerBytesMax = 3 + 15*10 + 4

// recordBytesMin is the size of a record with no data (wal's record header).
const recordBytesMin = 32

// AppendMessage appends the encoding of m to e: the core's header in
// raft's strict codec (without entries), then for an AppendEntries the
// chain value at PrevLogIndex and the WAL records of its entries byte for
// byte. Entry data is never encoded on its own: the receiver decodes the
// entries from the records.
func AppendMessage(e *wire.Encoder, m *replica.Message) error {
	if carriesRecords(m.Type) && len(m.Records) != len(m.Entries) {
		return fmt.Errorf("transport: %v with %d entries and %d records", m.Type, len(m.Entries), len(m.Records))
	}
	if !carriesRecords(m.Type) && (len(m.Records) != 0 || m.PrevChecksum != 0) {
		return fmt.Errorf("transport: %v carries records or a chain value", m.Type)
	}
	if (m.Type == raft.MsgSnap) != (m.Chunk != nil) {
		return fmt.Errorf("transport: %v with a snapshot chunk %v", m.Type, m.Chunk != nil)
	}
	hdr := m.Message
	hdr.Entries = nil
	e.Bytes(raft.MarshalMessage(&hdr))
	if m.Type == raft.MsgSnap {
		appendChunk(e, m.Chunk)
		return nil
	}
	if !carriesRecords(m.Type) {
		return nil
	}
	e.U32(m.PrevChecksum)
	e.U32(uint32(len(m.Records)))
	for _, r := range m.Records {
		e.Bytes(r)
	}
	return nil
}

// carriesRecords reports whether messages of type t carry entries, as the
// WAL records of the sender: an AppendEntries, and a repair answer
// (raft's MsgRepairResp: a peer's durable entries for a TRUNCATED member).
// Every other type's entries are none (the strict codec's header).
func carriesRecords(t raft.MessageType) bool { return t == raft.MsgApp || t == raft.MsgRepairResp }

// DecodeMessage decodes one message: the header with raft's strict codec,
// then, for an AppendEntries only, the chain value and the records, each
// decoded and verified (checksum, framing) into the entry it carries, at
// the index the header says. Records and entry data alias the payload. The
// replica verifies the chain and the records against its log again before
// the core sees the message; the core validates every field.
func DecodeMessage(d *wire.Decoder, lim Limits) (replica.Message, error) {
	var m replica.Message
	hdr := d.Bytes("message header", headerBytesMax)
	if d.Err() != nil {
		return m, d.Err()
	}
	core, err := raft.UnmarshalMessage(hdr, 0, 0)
	if err != nil {
		return m, fmt.Errorf("%w: %w", wire.ErrFrame, err)
	}
	m.Message = core
	if core.Type == raft.MsgSnap {
		m.Chunk = decodeChunk(d, lim.chunkBytesMax())
		return m, d.Err()
	}
	if !carriesRecords(core.Type) {
		return m, nil
	}
	m.PrevChecksum = d.U32("chain value")
	n := d.Count("record count", 4+recordBytesMin, lim.EntriesMax)
	if n > 0 {
		m.Records = make([]wal.Record, n)
		m.Entries = make([]raft.Entry, n)
	}
	for k := 0; k < n; k++ {
		b := d.Bytes("record", recordBytesMin+lim.EntryBytesMax)
		if d.Err() != nil {
			return replica.Message{}, d.Err()
		}
		rec := wal.Record(b)
		e, _, _, err := rec.Decode(lim.EntryBytesMax)
		if err != nil {
			return replica.Message{}, fmt.Errorf("%w: record %d of %v: %w", wire.ErrFrame, k, core, err)
		}
		if e.Index != core.PrevLogIndex+1+uint64(k) {
			return replica.Message{}, fmt.Errorf("%w: record %d holds index %d after prev index %d", wire.ErrFrame, k, e.Index, core.PrevLogIndex)
		}
		m.Records[k] = rec
		m.Entries[k] = raft.Entry{Index: e.Index, Term: e.Term, Data: e.Data}
	}
	return m, d.Err()
}

// EncodeBatch encodes messages as one Messages payload: a count, then
// each message.
func EncodeBatch(dst []byte, ms []replica.Message) ([]byte, error) {
	e := wire.Encoder{B: dst}
	e.U32(uint32(len(ms)))
	for k := range ms {
		if err := AppendMessage(&e, &ms[k]); err != nil {
			return dst, err
		}
	}
	return e.B, nil
}

// DecodeBatch decodes a Messages payload strictly (no trailing bytes).
func DecodeBatch(payload []byte, lim Limits) ([]replica.Message, error) {
	d := wire.NewDecoder(payload)
	n := d.Count("message count", 4+3, 1<<20)
	out := make([]replica.Message, 0, n)
	for k := 0; k < n; k++ {
		m, err := DecodeMessage(d, lim)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := d.End(); err != nil {
		return nil, err
	}
	return out, nil
}

// A snapshot transfer message (replica.SnapChunk) after its header:
//
//	kind    u8
//	flags   u8       bit 0 Restart; others zero
//	offset  u64
//	size    u64
//	sum     u32      CRC-32C of data (checked by the replica)
//	data    bytes    at most Limits.ChunkBytesMax
//	reason  string   at most replica.ReasonBytesMax
func appendChunk(e *wire.Encoder, c *replica.SnapChunk) {
	e.U8(uint8(c.Kind))
	var flags uint8
	if c.Restart {
		flags |= 1
	}
	e.U8(flags)
	e.U64(c.Offset)
	e.U64(c.Size)
	e.U32(c.Sum)
	e.Bytes(c.Data)
	e.String(c.Reason)
}

func decodeChunk(d *wire.Decoder, dataMax int) *replica.SnapChunk {
	c := &replica.SnapChunk{Kind: replica.ChunkKind(d.U8("chunk kind"))}
	flags := d.U8("chunk flags")
	if flags&^1 != 0 {
		d.Fail("chunk flags %#x", flags)
	}
	c.Restart = flags&1 != 0
	c.Offset, c.Size, c.Sum = d.U64("chunk offset"), d.U64("chunk size"), d.U32("chunk sum")
	c.Data = d.Bytes("chunk data", dataMax)
	c.Reason = d.String("chunk reason", replica.ReasonBytesMax)
	return c
}
