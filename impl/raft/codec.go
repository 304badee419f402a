package raft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The wire encoding of a Message: strict on the wire (seed 002). A frame is
//
//	version    u8 (1)
//	type       u8
//	flags      u8        bit 0 Transfer, bit 1 Granted, bit 2 Success,
//	                     bit 3 Ambiguous; others zero
//	14 uvarints          from, to, term, lastLogIndex, lastLogTerm, prevLogIndex,
//	                     prevLogTerm, commit, leaderCommit, matchIndex,
//	                     hintIndex, hintTerm, round, seq
//	count      uvarint   entries; entry k has index prevLogIndex+1+k
//	entries              per entry: term uvarint, length uvarint, data
//	checksum   u32 LE    CRC-32C of every byte before it
//
// UnmarshalMessage refuses a bad checksum, an unknown version, type or flag,
// an overlong or overflowing varint, more entries or bytes than the limits
// (checked before allocating), trailing bytes, and any frame that does not
// re-encode to itself. It checks the encoding only; Validate (which Step
// runs) checks what the fields mean.

const codecVersion = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCodec is returned for a frame that is not a valid encoding.
var ErrCodec = errors.New("raft: bad message frame")

// MarshalMessage encodes m.
func MarshalMessage(m *Message) []byte {
	b := make([]byte, 0, 64+len(m.Entries)*16)
	b = append(b, codecVersion, byte(m.Type), flagsOf(m))
	for _, v := range fieldsOf(m) {
		b = binary.AppendUvarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(m.Entries)))
	for _, e := range m.Entries {
		b = binary.AppendUvarint(b, e.Term)
		b = binary.AppendUvarint(b, uint64(len(e.Data)))
		b = append(b, e.Data...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func flagsOf(m *Message) byte {
	var f byte
	if m.Transfer {
		f |= 1
	}
	if m.Granted {
		f |= 2
	}
	if m.Success {
		f |= 4
	}
	if m.Ambiguous {
		f |= 8
	}
	return f
}

func fieldsOf(m *Message) [14]uint64 {
	return [14]uint64{uint64(m.From), uint64(m.To), m.Term, m.LastLogIndex, m.LastLogTerm, m.PrevLogIndex,
		m.PrevLogTerm, m.Commit, m.LeaderCommit, m.MatchIndex, m.HintIndex, m.HintTerm, m.Round, m.Seq}
}

// UnmarshalMessage decodes a frame, with at most maxEntries entries and
// maxBytes bytes of entry data.
func UnmarshalMessage(b []byte, maxEntries int, maxBytes uint64) (Message, error) {
	var m Message
	if len(b) < 3+14+1+4 {
		return m, fmt.Errorf("%w: %d bytes", ErrCodec, len(b))
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return m, fmt.Errorf("%w: checksum", ErrCodec)
	}
	if body[0] != codecVersion {
		return m, fmt.Errorf("%w: version %d", ErrCodec, body[0])
	}
	m.Type = MessageType(body[1])
	if m.Type < MsgVote || m.Type >= msgTypeEnd {
		return m, fmt.Errorf("%w: type %d", ErrCodec, body[1])
	}
	f := body[2]
	if f&^15 != 0 {
		return m, fmt.Errorf("%w: flags %#x", ErrCodec, f)
	}
	m.Transfer, m.Granted, m.Success, m.Ambiguous = f&1 != 0, f&2 != 0, f&4 != 0, f&8 != 0
	r := reader{b: body[3:]}
	var v [14]uint64
	for k := range v {
		v[k] = r.uvarint()
	}
	m.From, m.To, m.Term, m.LastLogIndex, m.LastLogTerm = NodeID(v[0]), NodeID(v[1]), v[2], v[3], v[4]
	m.PrevLogIndex, m.PrevLogTerm, m.Commit, m.LeaderCommit = v[5], v[6], v[7], v[8]
	m.MatchIndex, m.HintIndex, m.HintTerm, m.Round, m.Seq = v[9], v[10], v[11], v[12], v[13]
	count := r.uvarint()
	if r.err == nil && count > uint64(maxEntries) {
		return m, fmt.Errorf("%w: %d entries, at most %d", ErrCodec, count, maxEntries)
	}
	if r.err == nil && count > 0 && m.PrevLogIndex > IndexMax {
		return m, fmt.Errorf("%w: entries after index %d", ErrCodec, m.PrevLogIndex)
	}
	var size uint64
	for k := uint64(0); k < count && r.err == nil; k++ {
		e := Entry{Index: m.PrevLogIndex + 1 + k, Term: r.uvarint()}
		n := r.uvarint()
		if size += n; n > maxBytes || size > maxBytes {
			return m, fmt.Errorf("%w: more than %d bytes of entries", ErrCodec, maxBytes)
		}
		e.Data = r.bytes(n)
		m.Entries = append(m.Entries, e)
	}
	switch {
	case r.err != nil:
		return m, r.err
	case len(r.b) != 0:
		return m, fmt.Errorf("%w: %d trailing bytes", ErrCodec, len(r.b))
	}
	if string(MarshalMessage(&m)) != string(b) {
		return m, fmt.Errorf("%w: not in canonical form", ErrCodec)
	}
	return m, nil
}

// reader reads varints and byte strings, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad varint", ErrCodec)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: entry data beyond the frame", ErrCodec)
		return nil
	}
	out := append([]byte(nil), r.b[:n]...)
	r.b = r.b[n:]
	return out
}
