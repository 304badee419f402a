package spec

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRunLogIsASequence drives random operations on RunLogs and on plain
// entry slices side by side: every RunLog must read as its slice, and
// Equal and Compare must agree with the explorer's Log on the same
// entries (terms and values below 256), whatever the buffers shared.
func TestRunLogIsASequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type pair struct {
		l RunLog
		s []EntryOf[uint64]
	}
	pool := []pair{{}}
	toLog := func(s []EntryOf[uint64]) Log {
		var out Log
		for _, e := range s {
			out = out.Append(Entry{Term: uint8(e.Term), Value: e.Value})
		}
		return out
	}
	for step := 0; step < 20000; step++ {
		p := pool[rng.IntN(len(pool))]
		var q pair
		switch op := rng.IntN(10); {
		case op < 5:
			// terms grow slowly, values repeat: appends often meet an
			// entry another log appended at the same position
			last := uint64(1)
			if len(p.s) > 0 {
				last = p.s[len(p.s)-1].Term
			}
			e := EntryOf[uint64]{Term: last + uint64(rng.IntN(4)/3), Value: uint8(1 + rng.IntN(2))}
			q = pair{p.l.Append(e), append(slices.Clip(p.s), e)}
		case op < 7:
			k := rng.IntN(len(p.s) + 1)
			q = pair{p.l.Prefix(k), p.s[:k:k]}
		case op < 8 && len(p.s) > 0:
			lo := 1 + rng.IntN(len(p.s))
			hi := lo - 1 + rng.IntN(len(p.s)-lo+2)
			q = pair{p.l.SubSeq(lo, hi), slices.Clone(p.s[lo-1 : hi])}
		default:
			o := pool[rng.IntN(len(pool))]
			q = pair{p.l.Concat(o.l), append(slices.Clone(p.s), o.s...)}
		}
		if len(q.s) > 300 {
			continue
		}
		if q.l.Len() != len(q.s) {
			t.Fatalf("step %d: Len %d, want %d", step, q.l.Len(), len(q.s))
		}
		for k, e := range q.s {
			if q.l.At(k+1) != e || q.l.Term(k+1) != e.Term {
				t.Fatalf("step %d: entry %d is %v, want %v", step, k+1, q.l.At(k+1), e)
			}
		}
		if len(q.s) > 0 && q.l.LastTerm() != q.s[len(q.s)-1].Term {
			t.Fatalf("step %d: LastTerm", step)
		}
		o := pool[rng.IntN(len(pool))]
		if got, want := q.l.Compare(o.l), toLog(q.s).Compare(toLog(o.s)); got != want {
			t.Fatalf("step %d: Compare %d, Log.Compare %d (%v vs %v)", step, got, want, q.l, o.l)
		}
		if got, want := q.l.Equal(o.l), slices.Equal(q.s, o.s); got != want {
			t.Fatalf("step %d: Equal %v, want %v", step, got, want)
		}
		pool = append(pool, q)
		if len(pool) > 64 {
			pool = slices.Delete(pool, 0, 1)
		}
	}
	// Every view still reads as its slice: no append changed another's
	// entries.
	for k, p := range pool {
		for x, e := range p.s {
			if p.l.At(x+1) != e {
				t.Fatalf("pool %d entry %d changed to %v, want %v", k, x+1, p.l.At(x+1), e)
			}
		}
	}
}

// TestRunLogShares: logs that extend one history share its buffer, so a
// long log is neither copied per append nor compared entry by entry; a
// history that diverges gets a buffer of its own.
func TestRunLogShares(t *testing.T) {
	entry := func(k int) EntryOf[uint64] { return EntryOf[uint64]{Term: uint64(1 + k/5000), Value: uint8(k % 4)} }
	leader := runLogOf(entry(1))
	follower := leader.Prefix(0) // a view of the same history
	for k := 2; k <= 20000; k++ {
		leader = leader.Append(entry(k))
	}
	for k := 1; k <= 20000; k++ {
		follower = follower.Append(entry(k)) // meets the leader's entry at its position
	}
	if !leader.sameView(follower) || len(leader.b.runs) != 5 {
		t.Fatalf("follower does not share the leader's buffer (%d runs)", len(leader.b.runs))
	}
	kept := leader.Prefix(19990)
	other := kept.Append(EntryOf[uint64]{Term: 9, Value: 1})
	if other.b == leader.b || other.Len() != 19991 || other.Term(19991) != 9 || other.Term(19990) != 4 {
		t.Fatalf("a diverging append: %v", other.SubSeq(19988, 19991))
	}
	if leader.Term(19991) != 4 || !leader.Equal(follower) || leader.Equal(other) {
		t.Fatal("the diverging append changed the shared history")
	}
	if k := leader.firstDifference(other); k != 19991 {
		t.Fatalf("firstDifference %d, want 19991", k)
	}
	// The buffer grows with the history, not with the number of views.
	if n := len(leader.b.values); n != 20000 {
		t.Fatalf("buffer of %d entries, want 20000", n)
	}
}
