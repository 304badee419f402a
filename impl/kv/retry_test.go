package kv_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kv/kvtest"
)

// retryRequests are four requests of session 1, pipelined: R3 is sent after
// the client received R1's answer (its lowest unacknowledged is 2), the
// others before any answer. Their answers depend on the order they execute
// in, so a re-execution changes what the state or an answer is.
func retryRequests() []kv.Command {
	return []kv.Command{
		kv.CASValue(k, []byte("0"), []byte("1")).InSession(1, 1, 1),
		kv.Put([]byte("j"), []byte("x")).InSession(1, 2, 1),
		kv.Delete([]byte("j")).InSession(1, 3, 2),
		kv.CASValue(k, []byte("1"), []byte("4")).InSession(1, 4, 1),
	}
}

// orders returns every distinct sequence of the multiset in which each of n
// requests appears twice (its attempt and one retry), keeping those where
// R1's first attempt precedes R3's (R3 was sent after R1's answer).
func orders(n int) [][]int {
	var out [][]int
	left := make([]int, n)
	for i := range left {
		left[i] = 2
	}
	var cur []int
	var rec func()
	rec = func() {
		if len(cur) == 2*n {
			out = append(out, append([]int(nil), cur...))
			return
		}
		for r := range n {
			if left[r] == 0 || (r == 2 && left[0] == 2) {
				continue
			}
			left[r]--
			cur = append(cur, r)
			rec()
			cur = cur[:len(cur)-1]
			left[r]++
		}
	}
	rec()
	return out
}

// retryRun is one order applied with a snapshot at position cut.
type retryRun struct {
	entries [][]byte // the log from index 1
	results [][]byte // what the store answered, entry by entry
	final   *kv.Store
	log     []kvtest.Applied
}

// prefixEntries: session 1 registered at entry 1, k = "0" at entry 2.
func prefixEntries() [][]byte {
	reg, _ := kv.Register(60_000).Marshal()
	put, _ := kv.Put(k, []byte("0")).Marshal()
	return [][]byte{reg, put}
}

// runOrder applies the prefix and the attempts in order; after cut entries
// it takes a snapshot, finishes the log, then (a) restores the snapshot in a
// fresh store and (b) in the same store (a replica restarting from its
// snapshot) and replays the rest on each: both must answer and end exactly
// as the uninterrupted run did.
func runOrder(t *testing.T, order []int, cut int, bugs kv.Bug) retryRun {
	reqs := retryRequests()
	entries := prefixEntries()
	for i, r := range order {
		b, err := reqs[r].At(uint64(i)).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, b)
	}
	st := kv.NewStore(kv.Options{TestingBugs: bugs})
	var run retryRun
	var snap []byte
	for i, e := range entries {
		if i == cut {
			snap = snapshot(t, st)
		}
		out := st.Apply(uint64(i)+1, 1, e)
		run.results = append(run.results, out)
		run.log = append(run.log, kvtest.Applied{Index: uint64(i) + 1, Term: 1, Data: e, Result: out})
	}
	if snap == nil {
		snap = snapshot(t, st)
	}
	fresh := kv.NewStore(kv.Options{TestingBugs: bugs})
	for _, replay := range []*kv.Store{fresh, st} {
		if err := replay.Restore(bytes.NewReader(snap)); err != nil {
			t.Fatal(err)
		}
		for i := int(replay.AppliedIndex()); i < len(entries); i++ {
			if out := replay.Apply(uint64(i)+1, 1, entries[i]); !bytes.Equal(out, run.results[i]) {
				a, _ := kv.DecodeResult(out)
				b, _ := kv.DecodeResult(run.results[i])
				t.Fatalf("order %v cut %d: replayed entry %d answered %v, first run %v", order, cut, i+1, a, b)
			}
		}
		if err := replay.Verify(); err != nil {
			t.Fatal(err)
		}
	}
	if fresh.Hash() != st.Hash() {
		t.Fatalf("order %v cut %d: the replayed stores' hashes differ", order, cut)
	}
	run.entries, run.final = entries, fresh
	return run
}

// TestRetriesEveryOrder applies four pipelined requests, each attempted
// twice, in every order (1,260 of them) with a snapshot and a restore at
// every position of the log (0..10: 13,860 runs). In every run: each request is executed
// exactly once, at its first attempt; every retry gets the first answer, or
// CodeStale for a retry of R1 after R3 acknowledged it; the state is the
// state of the four requests executed once in first-attempt order; and the
// at-most-once checker accepts the history.
func TestRetriesEveryOrder(t *testing.T) {
	all := orders(4)
	if len(all) != 1260 {
		t.Fatalf("%d orders, want 8!/2^4/2 = 1260", len(all))
	}
	runs := 0
	for _, order := range all {
		want, wantState := expectedRetries(order)
		for cut := 0; cut <= len(order)+2; cut++ {
			run := runOrder(t, order, cut, 0)
			runs++
			for i, r := range order {
				got, _ := kv.DecodeResult(run.results[i+2])
				if got != want[i] {
					t.Fatalf("order %v cut %d: attempt %d (R%d) answered %v, want %v", order, cut, i, r+1, got, want[i])
				}
			}
			var state []string
			run.final.Range(func(key, value []byte, rev uint64) bool {
				state = append(state, fmt.Sprintf("%s=%s@%d", key, value, rev))
				return true
			})
			if fmt.Sprint(state) != wantState {
				t.Fatalf("order %v cut %d: state %v, want %v", order, cut, state, wantState)
			}
			if _, err := kvtest.CheckAtMostOnce(run.log, answersOf(run, order), run.final); err != nil {
				t.Fatalf("order %v cut %d: %v", order, cut, err)
			}
		}
	}
	t.Logf("%d orders, %d runs", len(all), runs)
}

// expectedRetries says, independently of the store, what each attempt of
// order must answer and what state is left: each request runs at its first
// attempt, on a plain map.
func expectedRetries(order []int) ([]kv.Result, string) {
	reqs := retryRequests()
	m := newModel()
	m.items["k"] = modelItem{"0", 2}
	first := map[int]kv.Result{}
	floor := uint64(1)
	var out []kv.Result
	for i, r := range order {
		index := uint64(i) + 3
		floor = max(floor, reqs[r].LowestUnacked)
		switch a, done := first[r]; {
		case reqs[r].Seq < floor:
			out = append(out, code(kv.CodeStale, index))
		case done:
			out = append(out, a)
		default:
			first[r] = m.write(index, reqs[r])
			out = append(out, first[r])
		}
	}
	var state []string
	for _, key := range []string{"j", "k"} {
		if it, ok := m.items[key]; ok {
			state = append(state, fmt.Sprintf("%s=%s@%d", key, it.value, it.revision))
		}
	}
	return out, fmt.Sprint(state)
}

func answersOf(run retryRun, order []int) []kvtest.Request {
	reqs := retryRequests()
	out := make([]kvtest.Request, len(reqs))
	for r, c := range reqs {
		out[r] = kvtest.Request{Session: c.Session, Seq: c.Seq}
	}
	for i, r := range order {
		out[r].Answers = append(out[r].Answers, run.results[i+2])
	}
	return out
}

// With de-duplication off, or a stale retry re-executed, the same orders
// break at-most-once, and the checker says so.
func TestRetriesEveryOrderBugs(t *testing.T) {
	for _, bug := range []kv.Bug{kv.BugNoDedup, kv.BugStaleReexecutes} {
		t.Run(bug.String(), func(t *testing.T) {
			caught, total := 0, 0
			for _, order := range orders(4) {
				run := runOrder(t, order, 3, bug)
				total++
				if _, err := kvtest.CheckAtMostOnce(run.log, answersOf(run, order), run.final); err != nil {
					caught++
				}
			}
			if caught == 0 {
				t.Fatalf("the checker accepted all %d orders with %v", total, bug)
			}
			t.Logf("%v: the checker rejects %d of %d orders", bug, caught, total)
		})
	}
}
