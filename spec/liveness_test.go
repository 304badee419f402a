package spec_test

import (
	"os"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
	"github.com/durableraft/durableraft/viz"
)

// The liveness check's counterexample to the unclamped learned commit
// (issue 10 item 5; raftspec liveness at 2 servers, term <= 2, log <= 1,
// msgs <= 1, 1 crash, 1 bad commit: docs/durable-raft.md, "LeaderCommit from
// a peer"): s1 leads term 2, crashes, and s2 accepts a heartbeat whose
// leader commit was raised to 1. It is a behaviour of the spec under
// learned-commit-unclamped only, and from its last state no fault-free
// continuation elects a leader that commits; with the clamp the same
// heartbeat teaches s2 nothing and a leader is elected.
func TestLivenessLearnedCommitUnclamped(t *testing.T) {
	const path = "testdata/liveness/learned-commit-unclamped.ndjson"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.CheckTrace(decode(t, data)); err != nil {
		t.Fatalf("under its switch: %v", err)
	}
	fixed := strings.Replace(string(data), `"bugs":"learned-commit-unclamped",`, "", 1)
	err = spec.CheckTrace(decode(t, []byte(fixed)))
	if err == nil || !strings.Contains(err.Error(), "learnedCommit") {
		t.Fatalf("with the clamp the trace must be rejected at s2's learnedCommit: %v", err)
	}
	opt := spec.LivenessOptions{ExtraTerm: 1, ExtraLog: 1}
	cfg := spec.Config{Profile: spec.ProfileDurable, Servers: 2, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 1,
		Crashes: 1, BadCommits: 1, Production: true}
	bug := cfg
	bug.Bugs = spec.BugLearnedCommitUnclamped
	steps := replay(t, model(t, bug), decode(t, data))
	last := steps[len(steps)-1]
	if ok, n := spec.LiveFrom(model(t, bug), last, opt); ok || n < 100 {
		t.Fatalf("unclamped: a leader commits again from the last state (%v, %d states)", ok, n)
	}
	// The fix: from the state before s2 handles the heartbeat, and from
	// the step s2 takes with the clamp.
	m := model(t, cfg)
	before := steps[len(steps)-2]
	if ok, n := spec.LiveFrom(m, before, opt); !ok {
		t.Fatalf("clamped: no continuation of the state before the heartbeat commits (%d states)", n)
	}
	took := 0
	m.Next(before, func(n spec.State, l spec.Label) {
		if l.Action != spec.ActHandleAppendEntriesRequest || l.Branch != spec.BranchAlreadyDone {
			return
		}
		took++
		if n.LearnedCommit[2] != 0 {
			t.Errorf("clamped: s2 learned %d from a heartbeat that proves 0", n.LearnedCommit[2])
		}
		if ok, k := spec.LiveFrom(m, &n, opt); !ok {
			t.Errorf("clamped: stuck after the heartbeat (%d states)", k)
		}
	})
	if took != 1 {
		t.Fatalf("%d successors handle the heartbeat, want 1", took)
	}
}

func decode(t *testing.T, data []byte) []trace.Event {
	t.Helper()
	events, err := trace.Decode(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func model(t *testing.T, c spec.Config) *spec.Model {
	t.Helper()
	m, err := spec.NewModel(c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// replay returns the states of the trace's run in m.
func replay(t *testing.T, m *spec.Model, events []trace.Event) []*spec.State {
	t.Helper()
	path, err := viz.TracePath(m, events)
	if err != nil {
		t.Fatal(err)
	}
	cur := m.Init()
	out := []*spec.State{cur}
	for _, k := range path {
		var succ []spec.State
		m.Next(cur, func(n spec.State, _ spec.Label) { succ = append(succ, n) })
		cur = &succ[k]
		out = append(out, cur)
	}
	return out
}

// The liveness check with power losses (issue 10 item 2,
// docs/durable-raft.md, "The ambiguous tail"): at 2 servers, term <= 2,
// log <= 1, msgs <= 1, a whole-cluster power loss (one PowerLoss per
// member), every reachable state has a fault-free continuation in which a
// leader commits. With -bug ambiguous-withholds-vote (an AMBIGUOUS member
// grants no vote, as a TRUNCATED one does) one torn tail, which lost
// nothing, wedges the cluster for ever: the kept trace is that behaviour,
// and its last state has no such continuation.
func TestLivenessPowerLoss(t *testing.T) {
	cfg := spec.Config{Profile: spec.ProfileDurable, Servers: 2, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 1,
		PowerLosses: 2}
	opt := spec.LivenessOptions{ExtraTerm: 1, ExtraLog: 1}
	res, err := spec.CheckLiveness(model(t, cfg), opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stuck != 0 || res.Reached < 1000 {
		t.Fatalf("power losses: %d stuck of %d reached", res.Stuck, res.Reached)
	}
	const path = "testdata/liveness/ambiguous-withholds-vote.ndjson"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.CheckTrace(decode(t, data)); err != nil {
		t.Fatalf("under its switch: %v", err)
	}
	bug := cfg
	bug.Bugs = spec.BugAmbiguousWithholdsVote
	steps := replay(t, model(t, bug), decode(t, data))
	last := steps[len(steps)-1]
	if last.Verdict[1] != spec.Ambiguous || last.Log[1].Len() != 0 {
		t.Fatalf("the kept trace does not end with s1 AMBIGUOUS: %v %v", last.Verdict[1], last.Log[1])
	}
	if ok, n := spec.LiveFrom(model(t, bug), last, opt); ok || n < 100 {
		t.Fatalf("withheld vote: a leader commits again from the last state (%v, %d states)", ok, n)
	}
	if ok, n := spec.LiveFrom(model(t, cfg), last, opt); !ok {
		t.Fatalf("the rule: no continuation of the same state commits (%d states)", n)
	}
}
