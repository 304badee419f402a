package raft_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// UnmarshalMessage takes at most maxEntries entries: a frame with one more is
// refused with ErrCodec, before any entry is read; the same frame passes with
// a limit that allows it.
func TestUnmarshalEntriesLimit(t *testing.T) {
	m := raft.Message{Type: raft.MsgApp, From: 1, To: 2, Term: 3, PrevLogIndex: 4, PrevLogTerm: 3,
		Entries: []raft.Entry{{Index: 5, Term: 3, Data: []byte("a")}, {Index: 6, Term: 3, Data: []byte("b")}, {Index: 7, Term: 3}}}
	b := raft.MarshalMessage(&m)
	if _, err := raft.UnmarshalMessage(b, 2, 1<<20); !errors.Is(err, raft.ErrCodec) {
		t.Fatalf("3 entries with a limit of 2: %v, want ErrCodec", err)
	}
	got, err := raft.UnmarshalMessage(b, 3, 1<<20)
	if err != nil || len(got.Entries) != 3 {
		t.Fatalf("3 entries with a limit of 3: %d entries, %v", len(got.Entries), err)
	}
	// The byte bound: 2 bytes of data in all, and at most 1 in one entry.
	if got, err := raft.UnmarshalMessage(b, 3, 2); err != nil || len(got.Entries) != 3 {
		t.Fatalf("2 bytes of entries with a limit of 2: %d entries, %v", len(got.Entries), err)
	}
	if _, err := raft.UnmarshalMessage(b, 3, 1); !errors.Is(err, raft.ErrCodec) {
		t.Fatalf("2 bytes of entries with a limit of 1: %v, want ErrCodec", err)
	}
}

// Every proper prefix of a frame is refused with ErrCodec, as it is (by the
// checksum), and so is every prefix of its body given a checksum that
// matches: a varint cut short or missing is an error, never read as zero.
func TestUnmarshalTruncatedFrames(t *testing.T) {
	m := raft.Message{Type: raft.MsgApp, From: 1, To: 2, Term: 300, PrevLogIndex: 4000, PrevLogTerm: 300, Commit: 70000, LeaderCommit: 70000,
		Entries: []raft.Entry{{Index: 4001, Term: 300, Data: []byte("abc")}}}
	b := raft.MarshalMessage(&m)
	body := b[:len(b)-4]
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for k := range len(b) {
		if _, err := raft.UnmarshalMessage(b[:k], raft.WireEntriesMax, raft.WireBytesMax); !errors.Is(err, raft.ErrCodec) {
			t.Errorf("the first %d of %d bytes: %v, want ErrCodec", k, len(b), err)
		}
		if k >= len(body) {
			continue
		}
		cut := binary.LittleEndian.AppendUint32(append([]byte(nil), body[:k]...), crc32.Checksum(body[:k], castagnoli))
		if got, err := raft.UnmarshalMessage(cut, raft.WireEntriesMax, raft.WireBytesMax); !errors.Is(err, raft.ErrCodec) {
			t.Errorf("the first %d of %d body bytes with their checksum: %+v, %v; want ErrCodec", k, len(body), got, err)
		}
	}
}

// A leader's ReportSnapshot for a node it has no progress for (not a member)
// is ignored.
func TestReportSnapshotUnknownNode(t *testing.T) {
	cfg := raft.Config{ID: 1, Voters: []raft.NodeID{1}, ElectionTick: 10, HeartbeatTick: 1, Rand: seeded{}, Storage: raft.NewMemoryStorage()}
	n, err := raft.NewNode(cfg, raft.Boot{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	before := n.Status()
	n.ReportSnapshot(99, 5, true)
	if after := n.Status(); after.Role != raft.RoleLeader || after.Last != before.Last {
		t.Fatalf("after a report for an unknown node: %+v, was %+v", after, before)
	}
}
