package transport

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wire"
)

// appMessage is an AppendEntries from 1 to 2 carrying n entries after
// prev, with their records chained from prevSum.
func appMessage(prev uint64, prevSum uint32, n int) replica.Message {
	m := replica.Message{Message: raft.Message{Type: raft.MsgApp, From: 1, To: 2, Term: 3, PrevLogIndex: prev, PrevLogTerm: 2,
		Commit: prev, LeaderCommit: prev + 1, Round: 4, Seq: 5}, PrevChecksum: prevSum}
	sum := prevSum
	for k := 0; k < n; k++ {
		e := wal.Entry{Index: prev + 1 + uint64(k), Term: 3, Data: bytes.Repeat([]byte{byte(k)}, k*10)}
		var rec wal.Record
		rec, sum = wal.EncodeRecord(sum, e)
		m.Records = append(m.Records, rec)
		m.Entries = append(m.Entries, raft.Entry{Index: e.Index, Term: e.Term, Data: e.Data})
	}
	return m
}

func sampleMessages() []replica.Message {
	return []replica.Message{
		{Message: raft.Message{Type: raft.MsgVote, From: 1, To: 2, Term: 7, LastLogIndex: 9, LastLogTerm: 6, Transfer: true}},
		{Message: raft.Message{Type: raft.MsgVoteResp, From: 2, To: 1, Term: 7, Granted: true}},
		{Message: raft.Message{Type: raft.MsgPreVote, From: 1, To: 3, Term: 8, LastLogIndex: 9, LastLogTerm: 6}},
		{Message: raft.Message{Type: raft.MsgAppResp, From: 2, To: 1, Term: 7, Success: true, MatchIndex: 12, Round: 1, Seq: 2}},
		{Message: raft.Message{Type: raft.MsgTimeoutNow, From: 1, To: 2, Term: 7}},
		appMessage(10, 0xdeadbeef, 0), // a heartbeat
		appMessage(10, 0x1234, 3),
		{Message: raft.Message{Type: raft.MsgSnap, From: 1, To: 2, Term: 7, PrevLogIndex: 90, PrevLogTerm: 6, LeaderCommit: 95},
			Chunk: &replica.SnapChunk{Kind: replica.ChunkData, Offset: 4096, Size: 10000, Data: []byte("chunk bytes"), Sum: 0xfeedf00d}},
		{Message: raft.Message{Type: raft.MsgSnap, From: 2, To: 1, Term: 7, PrevLogIndex: 90, PrevLogTerm: 6},
			Chunk: &replica.SnapChunk{Kind: replica.ChunkAck, Offset: 4107}},
		{Message: raft.Message{Type: raft.MsgSnap, From: 2, To: 1, Term: 7, PrevLogIndex: 90, PrevLogTerm: 6},
			Chunk: &replica.SnapChunk{Kind: replica.ChunkRefuse, Restart: true, Reason: "verification failed"}},
		{Message: raft.Message{Type: raft.MsgRepair, From: 3, To: 1, Term: 8, LastLogIndex: 4, LastLogTerm: 2, PrevLogIndex: 4}},
		repairAnswer(0),
		repairAnswer(2),
	}
}

// repairAnswer is a peer's repair answer (raft.MsgRepairResp) from 1 to 3
// carrying n entries of its durable log after index 4, with their records:
// the entries travel as records, as an AppendEntries' do.
func repairAnswer(n int) replica.Message {
	m := appMessage(4, 0x77, n)
	m.Message = raft.Message{Type: raft.MsgRepairResp, From: 1, To: 3, Term: 8, LastLogIndex: 4 + uint64(n), LastLogTerm: 3,
		PrevLogIndex: 4, PrevLogTerm: 2, Entries: m.Entries}
	if n == 0 {
		m.Records, m.PrevChecksum = nil, 0
	}
	return m
}

func eq(a, b []replica.Message) string {
	return cmp.Diff(a, b, cmp.Comparer(func(x, y []byte) bool { return bytes.Equal(x, y) }))
}

func TestBatchRoundTrip(t *testing.T) {
	ms := sampleMessages()
	b, err := EncodeBatch(nil, ms)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeBatch(b, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if d := eq(ms, got); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	// Entry data aliases the records: nothing was encoded twice.
	if len(b) > 2000 {
		t.Fatalf("batch of %d bytes", len(b))
	}
}

// TestDecodeRefusals: one row per rule of DecodeMessage, each refused with
// ErrFrame.
func TestDecodeRefusals(t *testing.T) {
	enc := func(ms ...replica.Message) []byte {
		b, err := EncodeBatch(nil, ms)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	app := appMessage(10, 1, 2)
	flipRecord := func() []byte {
		b := enc(app)
		b[len(b)-3] ^= 1 // inside the last record's data
		return b
	}
	gap := appMessage(10, 1, 2)
	gap.Records[1], _ = wal.EncodeRecord(7, wal.Entry{Index: 13, Term: 3})
	gap.Entries[1] = raft.Entry{Index: 13, Term: 3}
	rows := []struct {
		name string
		b    []byte
		lim  Limits
	}{
		{"empty", nil, DefaultLimits},
		{"count beyond bytes", []byte{5, 0, 0, 0, 1}, DefaultLimits},
		{"trailing byte", append(enc(sampleMessages()[0]), 0), DefaultLimits},
		{"header checksum", func() []byte { b := enc(sampleMessages()[0]); b[10] ^= 1; return b }(), DefaultLimits},
		{"record checksum", flipRecord(), DefaultLimits},
		{"record index gap", enc(gap), DefaultLimits},
		{"too many records", enc(app), Limits{EntriesMax: 1, EntryBytesMax: 1 << 20}},
		{"entry too large", enc(appMessage(10, 1, 3)), Limits{EntriesMax: 10, EntryBytesMax: 5}},
		{"chunk too large", enc(sampleMessages()[7]), Limits{EntriesMax: 10, EntryBytesMax: 5, ChunkBytesMax: 4}},
		{"chunk flags", func() []byte { b := enc(sampleMessages()[8]); b[len(b)-29] = 2; return b }(), DefaultLimits},
		{"chunk truncated", func() []byte { b := enc(sampleMessages()[8]); return b[:len(b)-1] }(), DefaultLimits},
	}
	for _, r := range rows {
		if _, err := DecodeBatch(r.b, r.lim); !errors.Is(err, wire.ErrFrame) {
			t.Errorf("%s: %v, want ErrFrame", r.name, err)
		}
	}
}

func TestEncodeRefusesMismatchedRecords(t *testing.T) {
	m := appMessage(1, 0, 2)
	m.Records = m.Records[:1]
	if _, err := EncodeBatch(nil, []replica.Message{m}); err == nil {
		t.Fatal("2 entries with 1 record encoded")
	}
	v := sampleMessages()[0]
	v.PrevChecksum = 1
	if _, err := EncodeBatch(nil, []replica.Message{v}); err == nil {
		t.Fatal("a vote with a chain value encoded")
	}
	s := sampleMessages()[7]
	s.Chunk = nil
	if _, err := EncodeBatch(nil, []replica.Message{s}); err == nil {
		t.Fatal("a snapshot message without its chunk encoded")
	}
	v = sampleMessages()[0]
	v.Chunk = &replica.SnapChunk{Kind: replica.ChunkAck}
	if _, err := EncodeBatch(nil, []replica.Message{v}); err == nil {
		t.Fatal("a vote with a snapshot chunk encoded")
	}
}

// FuzzDecodeBatch: any payload either decodes to messages that re-encode
// to it exactly, or is refused with ErrFrame; never a panic.
func FuzzDecodeBatch(f *testing.F) {
	b, _ := EncodeBatch(nil, sampleMessages())
	f.Add(b)
	for _, m := range sampleMessages() {
		b, _ := EncodeBatch(nil, []replica.Message{m})
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := DecodeBatch(b, Limits{EntriesMax: 64, EntryBytesMax: 4096})
		if err != nil {
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatalf("error not wrapping ErrFrame: %v", err)
			}
			return
		}
		again, err := EncodeBatch(nil, ms)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("accepted batch does not re-encode to itself: %v", err)
		}
	})
}

// FuzzHandshake: the handshake decoders never panic and are canonical.
func FuzzHandshake(f *testing.F) {
	f.Add(hello{ClusterID: 1, From: 2, To: 3, ClientAddr: "127.0.0.1:1"}.encode())
	f.Add(ack{ClusterID: 1, ID: 2, ClientAddr: "x"}.encode())
	f.Add(refusal{Code: 1, Message: "no"}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := decodeHello(b); err == nil && !bytes.Equal(h.encode(), b) {
			t.Fatal("hello not canonical")
		}
		if a, err := decodeAck(b); err == nil && !bytes.Equal(a.encode(), b) {
			t.Fatal("ack not canonical")
		}
		if r, err := decodeRefusal(b); err == nil && !bytes.Equal(r.encode(), b) {
			t.Fatal("refusal not canonical")
		}
	})
}
