package raft

import "fmt"

// Storage is how the core reads log entries it no longer keeps in memory:
// catch-up of a lagging follower, committed entries to apply, the terms of
// the recovered log at boot. The core only reads. It never reads an index
// above the last index it handed out in a Ready, nor one it has since
// truncated, so Storage only needs to hold what the caller wrote in the
// order of the Readies (impl/wal's read path does: written entries are
// readable before they are durable).
//
// Every entry returned is checked against the core's own record of the
// log's terms (a read-back check, paired with the write): a mismatch is an
// AlertStorage and the entries are not used.
type Storage interface {
	// FirstIndex is the first index still stored (1 unless compacted).
	FirstIndex() uint64
	// LastIndex is the last index stored.
	LastIndex() uint64
	// Term is the term of the entry at index, for FirstIndex()-1 <= index
	// <= LastIndex() (FirstIndex()-1 is the compaction base: its term is
	// kept; index 0 has term 0).
	Term(index uint64) (uint64, error)
	// Entries returns the entries [lo, hi), lo >= FirstIndex(), hi <=
	// LastIndex()+1, at least one entry when lo < hi, and then no more than
	// bytesMax bytes of Data in all.
	Entries(lo, hi, bytesMax uint64) ([]Entry, error)
}

// MemoryStorage is a Storage in memory, for tests and simulations. It is
// not safe for concurrent use (the core's callers drive it from one
// goroutine).
//
// Invariants: ents[k].Index = base + 1 + k; terms never decrease.
type MemoryStorage struct {
	base     uint64 // compaction base: entries <= base are gone
	baseTerm uint64
	ents     []Entry
}

// NewMemoryStorage returns an empty log.
func NewMemoryStorage() *MemoryStorage { return &MemoryStorage{} }

// FirstIndex implements Storage.
func (s *MemoryStorage) FirstIndex() uint64 { return s.base + 1 }

// LastIndex implements Storage.
func (s *MemoryStorage) LastIndex() uint64 { return s.base + uint64(len(s.ents)) }

// Term implements Storage.
func (s *MemoryStorage) Term(index uint64) (uint64, error) {
	switch {
	case index == s.base:
		return s.baseTerm, nil
	case index < s.base:
		return 0, ErrCompacted
	case index > s.LastIndex():
		return 0, ErrUnavailable
	}
	return s.ents[index-s.base-1].Term, nil
}

// Entries implements Storage.
func (s *MemoryStorage) Entries(lo, hi, bytesMax uint64) ([]Entry, error) {
	switch {
	case lo <= s.base:
		return nil, ErrCompacted
	case hi > s.LastIndex()+1 || lo > hi:
		return nil, fmt.Errorf("%w: [%d, %d) beyond last index %d", ErrUnavailable, lo, hi, s.LastIndex())
	}
	// A full slice expression: whoever keeps the result (a message in
	// flight) must not see a later append overwrite it.
	out := s.ents[lo-s.base-1 : hi-s.base-1 : hi-s.base-1]
	return limitBytes(out, bytesMax), nil
}

// limitBytes returns the longest prefix of ents within bytesMax bytes of
// Data, and at least one entry.
func limitBytes(ents []Entry, bytesMax uint64) []Entry {
	var size uint64
	for k, e := range ents {
		size += uint64(len(e.Data))
		if k > 0 && size > bytesMax {
			return ents[:k]
		}
	}
	return ents
}

// Append writes entries after the last one, truncating first at
// entries[0].Index if it is not LastIndex()+1 (a Ready's TruncateFrom and
// Entries in one call).
func (s *MemoryStorage) Append(entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	first := entries[0].Index
	if first <= s.base || first > s.LastIndex()+1 {
		return fmt.Errorf("raft: MemoryStorage.Append at %d, log is (%d, %d]", first, s.base, s.LastIndex())
	}
	for k, e := range entries {
		if e.Index != first+uint64(k) {
			return fmt.Errorf("raft: MemoryStorage.Append: entry %d has index %d", k, e.Index)
		}
	}
	keep := first - s.base - 1
	s.ents = append(s.ents[:keep:keep], entries...)
	return nil
}

// Truncate removes the entries from index from on.
func (s *MemoryStorage) Truncate(from uint64) error {
	if from <= s.base {
		return ErrCompacted
	}
	if from > s.LastIndex() {
		return nil
	}
	keep := from - s.base - 1
	s.ents = s.ents[:keep:keep]
	return nil
}

// Compact drops the entries up to and including index.
func (s *MemoryStorage) Compact(index uint64) error {
	if index <= s.base {
		return nil
	}
	if index > s.LastIndex() {
		return ErrUnavailable
	}
	t, _ := s.Term(index)
	s.ents = append([]Entry(nil), s.ents[index-s.base:]...)
	s.base, s.baseTerm = index, t
	return nil
}

// Clone returns an independent copy (entry data shared: it is immutable).
func (s *MemoryStorage) Clone() *MemoryStorage {
	return &MemoryStorage{base: s.base, baseTerm: s.baseTerm, ents: append([]Entry(nil), s.ents...)}
}

// Prefix keeps the entries up to and including index (a crash that keeps a
// prefix).
func (s *MemoryStorage) Prefix(index uint64) {
	if index < s.LastIndex() && index >= s.base {
		keep := index - s.base
		s.ents = s.ents[:keep:keep]
	}
}

// Reset replaces the log with the empty log after a snapshot at (index,
// term): an installed snapshot (Ready.Snapshot).
func (s *MemoryStorage) Reset(index, term uint64) {
	s.base, s.baseTerm, s.ents = index, term, nil
}
