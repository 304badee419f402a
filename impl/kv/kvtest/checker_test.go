package kvtest_test

import (
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kv/kvtest"
)

var (
	k = []byte("k")
	v = []byte("v")
)

// history applies cmds from index 1 through a Recorder.
func history(t *testing.T, bugs kv.Bug, cmds ...kv.Command) *kvtest.Recorder {
	t.Helper()
	rec := &kvtest.Recorder{Store: kv.NewStore(kv.Options{TestingBugs: bugs})}
	for _, c := range cmds {
		data, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		rec.Apply(rec.Store.AppliedIndex()+1, 1, data)
	}
	return rec
}

// retries is a history with each way a request comes back: a retry inside
// the window (index 3), a delayed duplicate after the client acknowledged
// it (6), and a retry after its session expired (9).
func retries(t *testing.T, bugs kv.Bug) *kvtest.Recorder {
	put1 := kv.CASRevision(k, 0, v).InSession(1, 1, 1)
	put2 := kv.Put(k, []byte("w")).InSession(1, 2, 2)
	return history(t, bugs,
		kv.Register(100).At(0), // 1: session 1
		put1.At(10),            // 2: executes
		put1.At(20),            // 3: a retry: answered from the session
		put2.At(30),            // 4: the client had 1's answer
		kv.Noop().At(40),       // 5
		put1.At(50),            // 6: a delayed duplicate of 1: stale
		kv.Put(k, []byte("x")).InSession(1, 3, 3).At(60), // 7
		kv.Noop().At(500), // 8: session 1 expires
		kv.Put(k, []byte("x")).InSession(1, 3, 3).At(510), // 9: a retry on the expired session
	)
}

func requests() []kvtest.Request {
	return []kvtest.Request{{Session: 1, Seq: 1}, {Session: 1, Seq: 2}, {Session: 1, Seq: 3}}
}

func TestCheckerAcceptsTheStore(t *testing.T) {
	rec := retries(t, 0)
	rep, err := kvtest.CheckAtMostOnce(rec.Log, requests(), rec.Store)
	if err != nil {
		t.Fatal(err)
	}
	want := kvtest.Report{Entries: 9, Writes: 6, Executions: 3, Deduplicated: 1, Refused: 2}
	if rep != want {
		t.Fatalf("report %v, want %v", rep, want)
	}
}

// With each session rule switched off the same history applies a request
// twice, and the checker says so; with the rules on it passes (above).
func TestCheckerCatchesEachBug(t *testing.T) {
	for _, bug := range kv.AllBugs() {
		t.Run(bug.String(), func(t *testing.T) {
			rec := retries(t, bug)
			_, err := kvtest.CheckAtMostOnce(rec.Log, requests(), rec.Store)
			if err == nil || !strings.Contains(err.Error(), "applied twice") {
				t.Fatalf("with %v: %v", bug, err)
			}
			t.Log(err)
		})
	}
}

// Logs a store could only produce by lying in its answers, or by a client
// or runtime mixing things up: each is caught.
func TestCheckerCatchesForgedLogs(t *testing.T) {
	res := func(r kv.Result) []byte { return r.Marshal() }
	cases := []struct {
		name   string
		bugs   kv.Bug
		forge  func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request
		final  bool
		reason string
	}{
		{"a retry re-executed but answered as a retry", kv.BugExpiredReexecutes, func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request {
			rec.Log[8].Result = rec.Log[6].Result
			return reqs
		}, true, "a write took effect that no answer claims"},
		{"a retry answered otherwise than the first time", 0, func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request {
			rec.Log[2].Result = res(kv.Result{Code: kv.CodeMismatch, Index: 2})
			return reqs
		}, false, "not its first answer"},
		{"a retry answered from an entry that did not execute it", 0, func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request {
			rec.Log[2].Result = res(kv.Result{Code: kv.CodeOK, Index: 1})
			return reqs
		}, false, "which did not execute it"},
		{"an answer from a later entry", 0, func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request {
			rec.Log[2].Result = res(kv.Result{Code: kv.CodeOK, Index: 5, Revision: 5})
			return reqs
		}, false, "from a later entry"},
		{"a CAS that says it hit where it missed", 0, func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request {
			rec.Log[3].Result = res(kv.Result{Code: kv.CodeMismatch, Index: 4, Revision: 1})
			return reqs
		}, false, "on the state the earlier executions leave"},
		{"an answer that does not decode", 0, func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request {
			rec.Log[4].Result = []byte{1}
			return reqs
		}, false, "does not decode"},
		{"a client answered without an execution", 0, func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request {
			return append(reqs, kvtest.Request{Session: 1, Seq: 9, Answers: [][]byte{res(kv.Result{Code: kv.CodeOK, Index: 3, Revision: 3})}})
		}, false, "never executed"},
		{"a client answered otherwise than the execution", 0, func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request {
			reqs[0].Answers = [][]byte{res(kv.Result{Code: kv.CodeOK, Index: 3, Revision: 3})}
			return reqs
		}, false, "not the answer of its execution"},
		{"a request no client sent", 0, func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request {
			return reqs[1:]
		}, false, "which no client sent"},
		{"a sequence number reused for another write", 0, func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request {
			other, _ := kv.Put(k, []byte("other")).InSession(1, 1, 1).Marshal()
			rec.Log[2].Data = other
			return reqs
		}, false, "under that sequence number"},
		{"a gap in the log", 0, func(rec *kvtest.Recorder, reqs []kvtest.Request) []kvtest.Request {
			rec.Log = append(rec.Log[:3], rec.Log[4:]...)
			return reqs
		}, false, "without gaps"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := retries(t, tc.bugs)
			reqs := tc.forge(rec, requests())
			var final *kv.Store
			if tc.final {
				final = rec.Store
			}
			_, err := kvtest.CheckAtMostOnce(rec.Log, reqs, final)
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("error %v, want %q", err, tc.reason)
			}
		})
	}
}
