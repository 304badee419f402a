package spec

import (
	"bytes"
	"cmp"
	"fmt"
	"sort"
	"strings"
)

// RunLog is the trace checker's log: 64-bit terms kept as runs (a term and
// the index of its first entry), one byte of value per entry, in a buffer
// that every log extending the same history shares.
//
// A RunLog is a view (b, off, n) of entries off+1 .. off+n of an
// append-only buffer: a position of the buffer, once written, never
// changes, so views never see each other's changes. Append writes into the
// buffer when the view ends at its tip, or takes the next position when
// another view already appended the same entry there, and copies the view
// into a new buffer only when the histories diverge. So a log of 20,000
// entries is not copied per step: Prefix, SubSeq and Append are O(1)
// (amortized), Term is a binary search over the runs, and two logs that
// share a buffer compare equal in O(1).
//
// The zero RunLog is the empty log. RunLogs are not safe for concurrent
// use: Append may write into a shared buffer. The trace checker uses them
// from one goroutine; every CheckTrace starts from empty logs.
type RunLog struct {
	b   *runBuf
	off int
	n   int
}

type runBuf struct {
	values []uint8
	runs   []termRun // first strictly increasing; runs[0].first == 1
}

// termRun: entries first .. (the next run's first - 1) of a buffer have
// term term.
type termRun struct {
	first int
	term  uint64
}

// runLogOf builds a log from entries, in a buffer of its own.
func runLogOf(entries ...EntryOf[uint64]) RunLog {
	var l RunLog
	for _, e := range entries {
		l = l.Append(e)
	}
	return l
}

// Len is Len(log).
func (l RunLog) Len() int { return l.n }

// term is the term of buffer position x (1-based).
func (b *runBuf) term(x int) uint64 {
	if last := b.runs[len(b.runs)-1]; last.first <= x {
		return last.term
	}
	r := sort.Search(len(b.runs), func(r int) bool { return b.runs[r].first > x }) - 1
	return b.runs[r].term
}

// runEnd is the last buffer position of the run holding position x.
func (b *runBuf) runEnd(x int) int {
	r := sort.Search(len(b.runs), func(r int) bool { return b.runs[r].first > x })
	if r == len(b.runs) {
		return len(b.values)
	}
	return b.runs[r].first - 1
}

func (b *runBuf) push(e EntryOf[uint64]) {
	if len(b.runs) == 0 || b.runs[len(b.runs)-1].term != e.Term {
		b.runs = append(b.runs, termRun{first: len(b.values) + 1, term: e.Term})
	}
	b.values = append(b.values, e.Value)
}

// Term is log[index].term for 1 <= index <= Len(log).
func (l RunLog) Term(index int) uint64 {
	assert(index >= 1 && index <= l.n, "RunLog.Term(%d) of a log of %d entries", index, l.n)
	return l.b.term(l.off + index)
}

// At is log[index].
func (l RunLog) At(index int) EntryOf[uint64] {
	assert(index >= 1 && index <= l.n, "RunLog.At(%d) of a log of %d entries", index, l.n)
	x := l.off + index
	return EntryOf[uint64]{Term: l.b.term(x), Value: l.b.values[x-1]}
}

// LastTerm is the term of the last entry, or 0.
func (l RunLog) LastTerm() uint64 {
	if l.n == 0 {
		return 0
	}
	return l.Term(l.n)
}

// Append is Append(log, e).
func (l RunLog) Append(e EntryOf[uint64]) RunLog {
	if l.b != nil {
		x := l.off + l.n + 1 // the buffer position e goes to
		switch {
		case x == len(l.b.values)+1: // the view ends at the tip
			l.b.push(e)
			return RunLog{b: l.b, off: l.off, n: l.n + 1}
		case x <= len(l.b.values) && l.b.values[x-1] == e.Value && l.b.term(x) == e.Term:
			return RunLog{b: l.b, off: l.off, n: l.n + 1} // appended there before
		}
	}
	c := l.clone(l.n + 1)
	c.b.push(e)
	c.n++
	return c
}

// clone copies the view into a new buffer with room for capacity entries.
func (l RunLog) clone(capacity int) RunLog {
	b := &runBuf{values: make([]uint8, l.n, max(capacity, 2*l.n))}
	if l.n > 0 {
		copy(b.values, l.b.values[l.off:l.off+l.n])
		for x := l.off + 1; x <= l.off+l.n; x = l.b.runEnd(x) + 1 {
			b.runs = append(b.runs, termRun{first: x - l.off, term: l.b.term(x)})
		}
	}
	return RunLog{b: b, n: l.n}
}

// Prefix is SubSeq(log, 1, n).
func (l RunLog) Prefix(n int) RunLog {
	assert(n >= 0 && n <= l.n, "RunLog.Prefix(%d) of a log of %d entries", n, l.n)
	return RunLog{b: l.b, off: l.off, n: n}
}

// SubSeq is SubSeq(log, lo, hi); empty when hi < lo.
func (l RunLog) SubSeq(lo, hi int) RunLog {
	if hi < lo {
		return RunLog{}
	}
	assert(lo >= 1 && hi <= l.n, "RunLog.SubSeq(%d, %d) of a log of %d entries", lo, hi, l.n)
	return RunLog{b: l.b, off: l.off + lo - 1, n: hi - lo + 1}
}

// Concat is log \o suffix.
func (l RunLog) Concat(suffix RunLog) RunLog {
	if l.n == 0 {
		return suffix
	}
	for k := 1; k <= suffix.n; k++ {
		l = l.Append(suffix.At(k))
	}
	return l
}

// sameView reports whether l and o are views of the same entries of one
// buffer (so equal without looking at them).
func (l RunLog) sameView(o RunLog) bool { return l.b == o.b && l.off == o.off }

// Equal reports l = o.
func (l RunLog) Equal(o RunLog) bool {
	if l.n != o.n {
		return false
	}
	if l.n == 0 || l.sameView(o) {
		return true
	}
	if !bytes.Equal(l.b.values[l.off:l.off+l.n], o.b.values[o.off:o.off+o.n]) {
		return false
	}
	return l.firstTermDifference(o) > l.n
}

// firstTermDifference is the first index 1..min(Len) at which the terms of
// l and o differ, or min(Len)+1, walking run by run.
func (l RunLog) firstTermDifference(o RunLog) int {
	n := min(l.n, o.n)
	for k := 1; k <= n; {
		xl, xo := l.off+k, o.off+k
		if l.b.term(xl) != o.b.term(xo) {
			return k
		}
		k = min(l.b.runEnd(xl)-l.off, o.b.runEnd(xo)-o.off) + 1
	}
	return n + 1
}

// firstDifference is the first index at which l and o differ (an entry or
// the end of one of them), or 0 when they are equal.
func (l RunLog) firstDifference(o RunLog) int {
	if l.Equal(o) {
		return 0
	}
	n := min(l.n, o.n)
	k := 1
	if n > 0 && !l.sameView(o) {
		k = l.firstTermDifference(o)
		for v := 1; v < k; v++ {
			if l.b.values[l.off+v-1] != o.b.values[o.off+v-1] {
				k = v
				break
			}
		}
	} else {
		k = n + 1
	}
	return k
}

// Compare orders logs entry by entry, (term, value) lexicographically, a
// prefix first: the order of [Log.Compare].
func (l RunLog) Compare(o RunLog) int {
	k := l.firstDifference(o)
	switch {
	case k == 0:
		return 0
	case k > l.n || k > o.n:
		return cmp.Compare(l.n, o.n)
	}
	a, b := l.At(k), o.At(k)
	if c := cmp.Compare(a.Term, b.Term); c != 0 {
		return c
	}
	return cmp.Compare(a.Value, b.Value)
}

// summary is a cheap hash of the log's length and last entry, for
// bucketing states before comparing them.
func (l RunLog) summary() uint64 {
	h := uint64(l.n) * 0x9E3779B185EBCA87
	if l.n > 0 {
		e := l.At(l.n)
		h ^= e.Term*0xC2B2AE3D27D4EB4F + uint64(e.Value)
	}
	return h
}

func (l RunLog) String() string {
	var b strings.Builder
	b.WriteString("<<")
	for k := 1; k <= l.n; k++ {
		if k > 1 {
			b.WriteString(", ")
		}
		if k == 4 && l.n > 6 {
			fmt.Fprintf(&b, "... %d entries ..., ", l.n-6)
			k = l.n - 2
		}
		e := l.At(k)
		fmt.Fprintf(&b, "[term |-> %d, value |-> v%d]", e.Term, e.Value)
	}
	b.WriteString(">>")
	return b.String()
}
