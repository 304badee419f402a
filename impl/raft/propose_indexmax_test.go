package raft_test

import (
	"errors"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// A proposal that would take the log past IndexMax is dropped whole, and the
// log stays as it was; one that ends at IndexMax is taken.
func TestProposeBeyondIndexMax(t *testing.T) {
	st := raft.NewMemoryStorage()
	st.Reset(raft.IndexMax-3, 1)
	cfg := raft.Config{ID: 1, Voters: []raft.NodeID{1}, ElectionTick: 10, HeartbeatTick: 1, Rand: seeded{}, Storage: st}
	n, err := raft.NewNode(cfg, raft.Boot{HardState: raft.HardState{Term: 1}, Applied: raft.IndexMax - 3, Snapshot: raft.SnapshotInfo{Index: raft.IndexMax - 3, Term: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	if s := n.Status(); s.Role != raft.RoleLeader {
		t.Fatalf("a single voter after Campaign: %v, want the leader", s.Role)
	}
	last := n.Status().Last // IndexMax-2: the leader's no-op entry
	if _, err := n.Propose([]byte("a"), []byte("b"), []byte("c")); !errors.Is(err, raft.ErrProposalDropped) {
		t.Fatalf("three entries after %d: %v, want ErrProposalDropped (beyond IndexMax)", last, err)
	}
	if s := n.Status(); s.Last != last {
		t.Fatalf("the dropped proposal changed the log: last %d, want %d", s.Last, last)
	}
	if i, err := n.Propose([]byte("a"), []byte("b")); err != nil || i != last+1 {
		t.Fatalf("two entries ending at IndexMax: index %d, %v", i, err)
	}
}

// A leader holding uncommitted entries drops a proposal that would take them
// past UncommittedBytesMax; with nothing uncommitted a proposal is taken
// whatever its size (up to EntryBytesMax), so that progress never stops.
func TestProposeBeyondUncommittedBytesMax(t *testing.T) {
	cfg := raft.Config{ID: 1, Voters: []raft.NodeID{1}, ElectionTick: 10, HeartbeatTick: 1, Rand: seeded{},
		Storage: raft.NewMemoryStorage(), UncommittedBytesMax: 4}
	n, err := raft.NewNode(cfg, raft.Boot{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	if s := n.Status(); s.Role != raft.RoleLeader {
		t.Fatalf("a single voter after Campaign: %v, want the leader", s.Role)
	}
	if _, err := n.Propose([]byte("abcdef")); err != nil {
		t.Fatalf("6 bytes with nothing uncommitted: %v, want taken", err)
	}
	last := n.Status().Last
	if _, err := n.Propose([]byte("g")); !errors.Is(err, raft.ErrProposalDropped) {
		t.Fatalf("1 more byte over 6 uncommitted (max 4): %v, want ErrProposalDropped", err)
	}
	if s := n.Status(); s.Last != last {
		t.Fatalf("the dropped proposal changed the log: last %d, want %d", s.Last, last)
	}
}

// A proposal with an entry over EntryBytesMax is refused whole with
// ErrProposalTooLarge; an entry of exactly EntryBytesMax is taken.
func TestProposeEntryBytesMax(t *testing.T) {
	cfg := raft.Config{ID: 1, Voters: []raft.NodeID{1}, ElectionTick: 10, HeartbeatTick: 1, Rand: seeded{},
		Storage: raft.NewMemoryStorage(), EntryBytesMax: 8}
	n, err := raft.NewNode(cfg, raft.Boot{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	last := n.Status().Last
	if _, err := n.Propose([]byte("a"), make([]byte, 9)); !errors.Is(err, raft.ErrProposalTooLarge) {
		t.Fatalf("an entry of 9 bytes (max 8): %v, want ErrProposalTooLarge", err)
	}
	if s := n.Status(); s.Last != last {
		t.Fatalf("the refused proposal changed the log: last %d, want %d", s.Last, last)
	}
	if _, err := n.Propose(make([]byte, 8)); err != nil {
		t.Fatalf("an entry of exactly EntryBytesMax: %v", err)
	}
}
