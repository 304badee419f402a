package raft_test

import (
	"errors"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// MemoryStorage.Entries serves [lo, hi) only within the log: hi may be one
// past the last index, not more, and an empty range at the end is fine.
func TestMemoryStorageEntriesBounds(t *testing.T) {
	s := raft.NewMemoryStorage()
	if err := s.Append([]raft.Entry{{Index: 1, Term: 1}, {Index: 2, Term: 1}, {Index: 3, Term: 2}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lo, hi uint64
		n      int
		err    error
	}{
		{1, 4, 3, nil},
		{4, 4, 0, nil},
		{2, 3, 1, nil},
		{1, 5, 0, raft.ErrUnavailable},
		{4, 5, 0, raft.ErrUnavailable},
		{3, 2, 0, raft.ErrUnavailable},
	} {
		ents, err := s.Entries(c.lo, c.hi, 1<<30)
		if !errors.Is(err, c.err) || (err == nil && len(ents) != c.n) {
			t.Errorf("Entries(%d, %d): %d entries, %v; want %d, %v", c.lo, c.hi, len(ents), err, c.n, c.err)
		}
	}
	// Compacted through 2: the base itself is gone, the next one is there.
	if err := s.Compact(2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Entries(2, 4, 1<<30); !errors.Is(err, raft.ErrCompacted) {
		t.Errorf("Entries(2, 4) compacted through 2: %v, want ErrCompacted", err)
	}
	if ents, err := s.Entries(3, 4, 1<<30); err != nil || len(ents) != 1 || ents[0].Index != 3 {
		t.Errorf("Entries(3, 4) compacted through 2: %v, %v", ents, err)
	}
}

// Prefix keeps the entries up to index; an index at or past the last, or
// below the compaction base, keeps the log as it is.
func TestMemoryStoragePrefixBounds(t *testing.T) {
	s := raft.NewMemoryStorage()
	s.Reset(5, 1)
	if err := s.Append([]raft.Entry{{Index: 6, Term: 1}, {Index: 7, Term: 2}, {Index: 8, Term: 2}}); err != nil {
		t.Fatal(err)
	}
	for _, index := range []uint64{3, 8, 9} {
		c := s.Clone()
		c.Prefix(index)
		if c.LastIndex() != 8 || c.FirstIndex() != 6 {
			t.Errorf("Prefix(%d): log (%d, %d], want (5, 8] unchanged", index, c.FirstIndex()-1, c.LastIndex())
		}
	}
	s.Prefix(6)
	if s.LastIndex() != 6 {
		t.Errorf("Prefix(6): last %d, want 6", s.LastIndex())
	}
}
