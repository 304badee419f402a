package raft

import (
	"fmt"
	"slices"
	"sort"
)

// termRun says that the entries from index on have term, up to the next
// run. The runs record the term of every entry in O(number of terms)
// memory, so the core answers Term(i) for any index without reading
// storage.
type termRun struct{ index, term uint64 }

// raftLog is the node's view of its log: the terms of all entries, the data
// of the recent ones, and the watermarks.
//
// Invariants (checkInvariants):
//   - first-1 <= committed <= last; applied >= first-1 (applied may exceed
//     committed after a restart: the commit index is volatile, the state
//     machine's position is not); durable <= handed <= last.
//   - runs cover first..last: runs[0].index = first, indexes increase, terms
//     increase, every run index <= last (runs is empty when last < first).
//   - unstable holds handed+1..last; cache holds cacheFrom..handed.
//   - truncateFrom = 0, or truncateFrom = handed+1... the caller must remove
//     entries >= truncateFrom from storage before it appends unstable.
type raftLog struct {
	storage Storage

	first    uint64 // first index held; entries below were compacted
	baseTerm uint64 // term of first-1
	last     uint64
	runs     []termRun

	durable   uint64 // spec durableLen: the WAL reported entries up to here fdatasync'd
	committed uint64 // spec commitIndex
	applied   uint64 // handed to the state machine

	handed       uint64 // entries up to here were handed to the caller in a Ready
	truncateFrom uint64 // pending suffix truncation for the next Ready, 0 = none
	unstable     []Entry
	cache        []Entry
	cacheBytes   uint64
	cacheMax     uint64
}

func (l *raftLog) cacheFrom() uint64 { return l.handed + 1 - uint64(len(l.cache)) }

// term returns the term of the entry at index, and whether it is known.
func (l *raftLog) term(index uint64) (uint64, bool) {
	switch {
	case index == 0:
		return 0, true
	case index == l.first-1:
		return l.baseTerm, true
	case index < l.first || index > l.last:
		return 0, false
	}
	k := sort.Search(len(l.runs), func(k int) bool { return l.runs[k].index > index }) - 1
	return l.runs[k].term, true
}

// mustTerm is term for an index the caller knows is held.
func (l *raftLog) mustTerm(index uint64) uint64 {
	t, ok := l.term(index)
	if !ok {
		failf("term of %d outside the log (%d, %d]", index, l.first-1, l.last)
	}
	return t
}

func (l *raftLog) lastTerm() uint64 { return l.mustTerm(l.last) }

// durableTip is the last term and index of the durable prefix (what a
// candidate advertises and a voter compares with).
func (l *raftLog) durableTip() (term, index uint64) { return l.mustTerm(l.durable), l.durable }

// append adds entries after the last one.
func (l *raftLog) append(ents ...Entry) {
	for _, e := range ents {
		if e.Index != l.last+1 {
			failf("append index %d after last %d", e.Index, l.last)
		}
		lt := l.lastTerm()
		if e.Term < lt || e.Term < 1 {
			failf("append term %d after term %d", e.Term, lt)
		}
		if len(l.runs) == 0 || e.Term != lt {
			l.runs = append(l.runs, termRun{index: e.Index, term: e.Term})
		}
		l.last = e.Index
		l.unstable = append(l.unstable, e)
	}
}

// truncate removes the entries from index from on: a conflict with the
// leader's log. The durable index falls with the log (spec: durableLen' =
// Min(durableLen, Len(log'))); the commit index never does.
func (l *raftLog) truncate(from uint64) {
	if from <= l.committed || from < l.first || from > l.last {
		failf("truncate from %d: committed %d, log (%d, %d]", from, l.committed, l.first-1, l.last)
	}
	l.last = from - 1
	k := sort.Search(len(l.runs), func(k int) bool { return l.runs[k].index >= from })
	l.runs = l.runs[:k]
	l.durable = min(l.durable, l.last)
	if from <= l.handed {
		if l.truncateFrom == 0 || from < l.truncateFrom {
			l.truncateFrom = from
		}
		cf := l.cacheFrom()
		l.handed = from - 1
		l.unstable = nil
		if from <= cf {
			l.cache, l.cacheBytes = nil, 0
		} else {
			for _, e := range l.cache[from-cf:] {
				l.cacheBytes -= uint64(len(e.Data))
			}
			keep := from - cf
			l.cache = l.cache[:keep:keep]
		}
		return
	}
	keep := from - l.handed - 1
	l.unstable = l.unstable[:keep:keep]
}

// handOff is called when a Ready takes the unstable entries: they move to
// the cache, which keeps the newest cacheMax bytes.
func (l *raftLog) handOff() {
	for _, e := range l.unstable {
		l.cacheBytes += uint64(len(e.Data))
	}
	l.cache = append(l.cache, l.unstable...)
	l.handed = l.last
	l.unstable = nil
	l.truncateFrom = 0
	drop := 0
	for drop < len(l.cache) && l.cacheBytes > l.cacheMax {
		l.cacheBytes -= uint64(len(l.cache[drop].Data))
		drop++
	}
	if drop > 0 {
		// The dropped entries are cleared (their data is released) and the
		// slice moves past them: the next append that outgrows the array
		// copies only the kept entries. Copying the whole cache here, once
		// per Ready, made every small Ready cost the cache's size (70% of the
		// leader's allocation at 256 clients).
		clear(l.cache[:drop])
		l.cache = l.cache[drop:]
	}
}

// entries returns entries [lo, hi) with at most bytesMax bytes of data (at
// least one entry when lo < hi): from storage, the cache and unstable.
// Entries read from storage are checked against the log's terms.
func (l *raftLog) entries(lo, hi, bytesMax uint64) ([]Entry, error) {
	if lo >= hi {
		return nil, nil
	}
	if lo < l.first {
		return nil, ErrCompacted
	}
	if hi > l.last+1 {
		failf("entries [%d, %d) beyond last %d", lo, hi, l.last)
	}
	var out []Entry
	cf := l.cacheFrom()
	if lo < cf {
		got, err := l.storage.Entries(lo, min(hi, cf), bytesMax)
		if err != nil {
			return nil, err
		}
		if err := l.checkRead(lo, got); err != nil {
			return nil, err
		}
		out = got[:len(got):len(got)] // appending below must copy, not write into storage's array
		if uint64(len(got)) < min(hi, cf)-lo {
			return out, nil // the byte limit cut it short
		}
		lo = cf
	}
	// The entries in memory: counted first within bytesMax (limitBytes'
	// rule, the storage part included), then copied into one allocation.
	var size uint64
	for _, e := range out {
		size += uint64(len(e.Data))
	}
	end := lo
	for ; end < hi; end++ {
		size += uint64(len(l.at(end, cf).Data))
		if (len(out) > 0 || end > lo) && size > bytesMax {
			break
		}
	}
	out = slices.Grow(out, int(end-lo))
	if lo <= l.handed {
		out = append(out, l.cache[lo-cf:min(end, l.handed+1)-cf]...)
		lo = min(end, l.handed+1)
	}
	if lo < end {
		out = append(out, l.unstable[lo-l.handed-1:end-l.handed-1]...)
	}
	return out, nil
}

// at is the entry at index i held in memory (cache or unstable; cf is
// cacheFrom).
func (l *raftLog) at(i, cf uint64) *Entry {
	if i <= l.handed {
		return &l.cache[i-cf]
	}
	return &l.unstable[i-l.handed-1]
}

// checkRead is the read-back half of the pairing "terms recorded on append,
// checked on read".
func (l *raftLog) checkRead(lo uint64, got []Entry) error {
	if len(got) == 0 {
		return fmt.Errorf("%w: storage returned no entries at %d", ErrUnavailable, lo)
	}
	for k, e := range got {
		t, ok := l.term(lo + uint64(k))
		if e.Index != lo+uint64(k) || !ok || e.Term != t {
			return fmt.Errorf("storage returned entry %d/%d where the log has %d/%d", e.Term, e.Index, t, lo+uint64(k))
		}
	}
	return nil
}

// matchTerm reports whether the log has the entry (index, term).
func (l *raftLog) matchTerm(index, term uint64) bool {
	t, ok := l.term(index)
	return ok && t == term
}

// findConflictByTerm returns the largest index <= index whose term is <=
// term: the leader's fast back-off from a follower's hint (etcd-io/raft's
// findConflictByTerm).
func (l *raftLog) findConflictByTerm(index, term uint64) uint64 {
	index = min(index, l.last)
	for index >= l.first {
		t := l.mustTerm(index)
		if t <= term {
			return index
		}
		// Jump to the end of the previous run.
		k := sort.Search(len(l.runs), func(k int) bool { return l.runs[k].index > index }) - 1
		index = l.runs[k].index - 1
	}
	if index > 0 && index+1 == l.first && l.baseTerm > term {
		// The compaction base itself is of a later term: the match lies
		// below it, where only a snapshot reaches.
		return index - 1
	}
	return index
}

func (l *raftLog) checkInvariants() {
	if !(l.first >= 1 && l.first-1 <= l.applied && l.first-1 <= l.committed && l.committed <= l.last) {
		failf("first %d applied %d committed %d last %d", l.first, l.applied, l.committed, l.last)
	}
	if !(l.durable <= l.handed && l.handed <= l.last) {
		failf("durable %d handed %d last %d", l.durable, l.handed, l.last)
	}
	if uint64(len(l.unstable)) != l.last-l.handed {
		failf("unstable %d for (%d, %d]", len(l.unstable), l.handed, l.last)
	}
	if len(l.unstable) > 0 && l.unstable[0].Index != l.handed+1 {
		failf("unstable from %d, handed %d", l.unstable[0].Index, l.handed)
	}
	if len(l.cache) > 0 && (l.cache[0].Index != l.cacheFrom() || l.cacheFrom() < l.first) {
		failf("cache from %d, its place %d, first %d", l.cache[0].Index, l.cacheFrom(), l.first)
	}
	if l.truncateFrom != 0 && l.truncateFrom != l.handed+1 {
		failf("truncateFrom %d handed %d", l.truncateFrom, l.handed)
	}
	if l.last >= l.first && (len(l.runs) == 0 || l.runs[0].index != l.first) {
		failf("runs %v first %d", l.runs, l.first)
	}
	for k := 1; k < len(l.runs); k++ {
		if l.runs[k].index <= l.runs[k-1].index || l.runs[k].term <= l.runs[k-1].term {
			failf("runs %v", l.runs)
		}
	}
}
