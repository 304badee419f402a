package spec

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseActions(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", "", ""},
		{"DropMessage, Restart", "Restart,DropMessage", ""},
		{"Timeout@3,AppendEntries@2,DropMessage", "Timeout@3,AppendEntries@2,DropMessage", ""},
		{"Timeout,Timeout@1", "Timeout,Timeout@1", ""},
		{"Nope", "", "unknown action"},
		{"Timeout@0", "", "server number"},
		{"Timeout@6", "", "server number"},
		{"Timeout@x", "", "server number"},
	} {
		s, err := ParseActions(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case s.String() != tc.want:
			t.Errorf("%q: %q, want %q", tc.in, s.String(), tc.want)
		}
	}
	s, _ := ParseActions("Timeout@3,DropMessage")
	for _, tc := range []struct {
		l    Label
		want bool
	}{
		{Label{Action: ActTimeout, I: 3}, true},
		{Label{Action: ActTimeout, I: 2}, false},
		{Label{Action: ActDropMessage, I: 1}, true},
		{Label{Action: ActRestart, I: 3}, false},
	} {
		if got := s.Has(&tc.l); got != tc.want {
			t.Errorf("%v on %v: Has %v, want %v", tc.l.Action, tc.l.I, got, tc.want)
		}
	}
}

// TestDepthFirstCounts: depth first search visits the states breadth
// first search does (TLC's figures), with symmetry too, and its
// counterexamples replay.
func TestDepthFirstCounts(t *testing.T) {
	tc := tlcRaftCounts[0]
	m, err := NewModel(tc.cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Explore(m, Options{DepthFirst: true})
	if err != nil || res.Violation != nil || !res.Complete {
		t.Fatalf("explore: %v %+v complete=%v", err, res.Violation, res.Complete)
	}
	if res.Distinct != tc.distinct || res.Generated != tc.generated || res.Depth < tc.depth {
		t.Errorf("depth first: distinct=%d generated=%d depth=%d, TLC: %d %d (depth %d breadth first)",
			res.Distinct, res.Generated, res.Depth, tc.distinct, tc.generated, tc.depth)
	}
	sym := tlcSymmetricCounts[0]
	res, err = Explore(m, Options{DepthFirst: true, Symmetry: true})
	if err != nil || res.Distinct != sym.distinct || res.Generated != sym.generated {
		t.Errorf("depth first with symmetry: %v distinct=%d generated=%d, TLC: %d %d", err, res.Distinct, res.Generated, sym.distinct, sym.generated)
	}
	cfg := tc.cfg
	cfg.Bugs = BugQuorumHalf
	bug, _ := NewModel(cfg)
	res, err = Explore(bug, Options{DepthFirst: true, Symmetry: true, Merge: true})
	if err != nil || res.Violation == nil {
		t.Fatalf("quorum-half, depth first: %v, no violation", err)
	}
	replays(t, bug, res.Violation.Trace)
}

// replays checks that a counterexample is a behaviour: written as a trace,
// the trace checker accepts it.
func replays(t *testing.T, m *Model, steps []Step) {
	t.Helper()
	var buf bytes.Buffer
	if err := m.WriteTrace(&buf, steps); err != nil {
		t.Fatal(err)
	}
	if n, err := CheckTraceReader(&buf); err != nil {
		t.Fatalf("the counterexample (%d steps) does not replay: event %d: %v", len(steps), n, err)
	}
}

// TestSubModel: a search without some actions takes none of their steps,
// finds fewer states, and its violations replay in the full model; a sub-model
// that names a server is refused with symmetry.
func TestSubModel(t *testing.T) {
	m, _ := NewModel(tlcRaftCounts[0].cfg)
	without, _ := ParseActions("DropMessage,DuplicateMessage,Timeout@2")
	res, err := Explore(m, Options{Without: without})
	if err != nil || res.Violation != nil {
		t.Fatalf("explore: %v %+v", err, res.Violation)
	}
	if res.Distinct >= tlcRaftCounts[0].distinct {
		t.Errorf("sub-model: %d distinct, the model %d", res.Distinct, tlcRaftCounts[0].distinct)
	}
	if _, err := Explore(m, Options{Without: without, Symmetry: true}); err == nil {
		t.Error("symmetry with a sub-model that names a server: no error")
	}
	walks, err := Simulate(m, SimOptions{Walks: 50, Depth: 40, Seed: 1, Without: without, SwarmServers: true,
		OnWalk: func(_ int, steps []Step) {
			for _, st := range steps[1:] {
				if without.Has(&st.Label) {
					t.Errorf("a walk took %v on %v", st.Label.Action, st.Label.I)
				}
			}
		}})
	if err != nil || walks.Violation != nil {
		t.Fatalf("simulate: %v %+v", err, walks.Violation)
	}
	cfg := tlcRaftCounts[0].cfg
	cfg.Bugs = BugVoteIgnoresVotedFor
	bug, _ := NewModel(cfg)
	network, _ := ParseActions("DropMessage,DuplicateMessage")
	res, err = Explore(bug, Options{Without: network, Symmetry: true})
	if err != nil || res.Violation == nil {
		t.Fatalf("vote-ignores-votedfor in the sub-model: %v, no violation", err)
	}
	replays(t, bug, res.Violation.Trace)
}

// TestSwarmServersReplays: walks with per-server weights are a function of
// the seed, and differ from the per-action swarm's.
func TestSwarmServersReplays(t *testing.T) {
	m, _ := NewModel(tlcRaftCounts[0].cfg)
	run := func(servers bool) []Label {
		var labels []Label
		_, err := Simulate(m, SimOptions{Walks: 1, Depth: 60, Seed: 7, SwarmServers: servers, OnWalk: func(_ int, steps []Step) {
			for _, st := range steps {
				labels = append(labels, st.Label)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		return labels
	}
	a, b, c := run(true), run(true), run(false)
	if len(a) < 10 || !labelsEqual(a, b) {
		t.Errorf("the same seed gave different walks (%d and %d steps)", len(a), len(b))
	}
	if labelsEqual(a, c) {
		t.Error("per-server weights gave the per-action walk")
	}
}

func labelsEqual(a, b []Label) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}

// TestClassicBugsConfig: the classic switches are profile raft's too, the
// durable profile's fixes are not, and a trace keeps them.
func TestClassicBugsConfig(t *testing.T) {
	cfg := tlcRaftCounts[0].cfg
	for _, name := range []string{"vote-ignores-log-index", "commit-prior-term", "append-ignores-logok",
		"vote-ignores-votedfor", "quorum-half", "restart-forgets-vote"} {
		b, err := ParseBugs(name)
		if err != nil || b&classicBugs != b || b == 0 {
			t.Fatalf("%s: %v %v", name, b, err)
		}
		cfg.Bugs = b
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s in profile raft: %v", name, err)
		}
		if got := (&Model{Machine: newMachine[uint8, Log, VoterLog](cfg, true)}).TraceConfig("spec").Bugs; got != name {
			t.Errorf("%s: the trace says bugs=%q", name, got)
		}
	}
	cfg.Bugs = BugSelfCountsAppended
	if cfg.Validate() == nil {
		t.Error("a durable fix switched off in profile raft: no error")
	}
}
