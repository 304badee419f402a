package spec

import (
	"bytes"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/trace"
)

// TLC's figures for Ongaro's raft.tla under the CONSTRAINT of docs/explorer.md
// (docs/tla.md has the commands that reproduce them).
var tlcRaftCounts = []struct {
	cfg                 Config
	distinct, generated int64
	depth               int
	long                bool
}{
	{Config{Profile: ProfileRaft, Servers: 2, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 2}, 15254, 152835, 32, false},
	{Config{Profile: ProfileRaft, Servers: 2, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 2, MaxMsgs: 2}, 83866, 885287, 34, false},
	{Config{Profile: ProfileRaft, Servers: 3, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 1}, 2379781, 28169044, 53, true},
}

func TestRaftProfileMatchesTLC(t *testing.T) {
	for _, tc := range tlcRaftCounts {
		t.Run(tc.cfg.String(), func(t *testing.T) {
			if tc.long && testing.Short() {
				t.Skip("long: 2.4M states")
			}
			m, err := NewModel(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Explore(m, Options{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			if res.Violation != nil {
				t.Fatalf("violation %s: %s", res.Violation.Invariant, res.Violation.Detail)
			}
			if res.Distinct != tc.distinct || res.Generated != tc.generated || res.Depth != tc.depth {
				t.Fatalf("distinct=%d generated=%d depth=%d, TLC says %d %d %d",
					res.Distinct, res.Generated, res.Depth, tc.distinct, tc.generated, tc.depth)
			}
		})
	}
}

func smallDurable(bugs Bug) Config {
	return Config{Profile: ProfileDurable, Servers: 2, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 2,
		Crashes: 1, Corruptions: 1, Bugs: bugs}
}

func TestDurableProfileHoldsSmall(t *testing.T) {
	m, err := NewModel(smallDurable(0))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Explore(m, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("violation %s: %s", res.Violation.Invariant, res.Violation.Detail)
	}
	if res.Distinct != 57491 || res.Generated != 520445 {
		t.Errorf("distinct=%d generated=%d; docs/explorer.md records 57491 and 520445", res.Distinct, res.Generated)
	}
	want := []string{"LeaderElected", "EntryCommitted", "CrashAfterCommit", "CrashLosesUnsynced",
		"FollowerFlushes", "LearnedAheadOfDurable", "MemberTruncated", "CorruptAfterCommit", "TruncatedVoterAsked"}
	if err := CheckReached(res.Reached, want); err != nil {
		t.Error(err)
	}
	for _, r := range res.Reached {
		if r.Found {
			checkSteps(t, m, r.Witness())
		}
	}
}

// checkSteps writes a behaviour as a trace and replays it with CheckTrace.
func checkSteps(t *testing.T, m *Model, steps []Step) []trace.Event {
	t.Helper()
	var b bytes.Buffer
	if err := m.WriteTrace(&b, steps); err != nil {
		t.Fatal(err)
	}
	events, err := trace.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckTrace(events); err != nil {
		t.Fatalf("CheckTrace rejects the spec's own behaviour: %v", err)
	}
	return events
}

// TestBugsViolate replays the failure stories whose smallest bounds are
// small enough for every test run (docs/durable-raft.md lists all).
func TestBugsViolate(t *testing.T) {
	for _, tc := range []struct {
		bug       Bug
		invariant string
	}{
		{BugSelfCountsAppended, "CommittedIsDurable"},
		{BugFollowerAcksAppended, "CommittedIsDurable"},
		{BugReleaseAtLeaderCommit, "CommittedIsDurable"},
	} {
		t.Run(tc.bug.String(), func(t *testing.T) {
			m, err := NewModel(smallDurable(tc.bug))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Explore(m, Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			if res.Violation == nil || res.Violation.Invariant != tc.invariant {
				t.Fatalf("got %+v, want a %s violation", res.Violation, tc.invariant)
			}
			events := checkSteps(t, m, res.Violation.Trace)
			// The same trace is not a behaviour of the fixed protocol.
			fixed := events[0]
			fixed.Config = &trace.Config{Profile: "durable", Servers: 2, Values: 1, Crashes: 1, Corruptions: 1}
			if err := CheckTrace(append([]trace.Event{fixed}, events[1:]...)); err == nil {
				t.Fatalf("the fixed protocol accepts the %v counterexample", tc.bug)
			}
		})
	}
}

func TestCheckTraceRejectsMutations(t *testing.T) {
	m, err := NewModel(smallDurable(BugSelfCountsAppended))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Explore(m, Options{Workers: 1})
	if err != nil || res.Violation == nil {
		t.Fatalf("no counterexample: %v", err)
	}
	events := checkSteps(t, m, res.Violation.Trace)
	mutations := map[string]func(es []trace.Event) []trace.Event{
		"wrong term": func(es []trace.Event) []trace.Event {
			es[3].State.CurrentTerm++
			return es
		},
		"skipped step": func(es []trace.Event) []trace.Event {
			return append(es[:2:2], es[3:]...)
		},
		"wrong log": func(es []trace.Event) []trace.Event {
			for k := range es {
				if es[k].Action == "ClientRequest" {
					es[k].State.LogAppend = append(es[k].State.LogAppend, trace.Run{Term: 1, Values: []int{1}})
					break
				}
			}
			return es
		},
		"commit beyond the durable majority": func(es []trace.Event) []trace.Event {
			last := es[len(es)-1]
			if last.Action != "AdvanceCommitIndex" {
				t.Fatalf("counterexample ends with %s", last.Action)
			}
			// Under the fixed protocol the leader cannot commit here.
			es[0].Config.Bugs = ""
			return es
		},
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			es := cloneEvents(t, events)
			err := CheckTrace(mutate(es))
			if err == nil {
				t.Fatal("mutated trace accepted")
			}
			if !strings.Contains(err.Error(), "event") {
				t.Errorf("error does not name the event: %v", err)
			}
		})
	}
}

func cloneEvents(t *testing.T, events []trace.Event) []trace.Event {
	t.Helper()
	var b bytes.Buffer
	w := trace.NewWriter(&b)
	for _, e := range events {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	out, err := trace.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEncodeRoundTrip(t *testing.T) {
	m, err := NewModel(Config{Profile: ProfileDurable, Servers: 3, Values: 2, MaxTerm: 3, MaxLog: 2, MaxDup: 1,
		MaxMsgs: 3, Crashes: 1, Corruptions: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Simulate(m, SimOptions{Walks: 50, Depth: 60, Seed: 7, OnWalk: func(_ int, steps []Step) {
		for _, st := range steps {
			enc := m.Encode(nil, st.State)
			back, err := m.Decode(string(enc))
			if err != nil {
				t.Error(err)
				return
			}
			if !bytes.Equal(m.Encode(nil, back), enc) {
				t.Errorf("round trip changed the state after %v", st.Label)
				return
			}
		}
	}})
	if err != nil || res.Violation != nil {
		t.Fatalf("simulate: %v %+v", err, res.Violation)
	}
}

func TestSimulateIsReproducible(t *testing.T) {
	m, err := NewModel(Config{Profile: ProfileDurable, Servers: 3, Values: 1, MaxTerm: 3, MaxLog: 2, MaxDup: 1,
		MaxMsgs: 3, Crashes: 1, Corruptions: 1})
	if err != nil {
		t.Fatal(err)
	}
	walk := func() []string {
		var labels []string
		if _, err := Simulate(m, SimOptions{Walks: 1, Depth: 40, Seed: 42, OnWalk: func(_ int, steps []Step) {
			for _, st := range steps[1:] {
				labels = append(labels, st.Label.String())
			}
		}}); err != nil {
			t.Fatal(err)
		}
		return labels
	}
	a, b := walk(), walk()
	if strings.Join(a, "\n") != strings.Join(b, "\n") || len(a) == 0 {
		t.Fatalf("two walks with one seed differ or are empty: %d vs %d steps", len(a), len(b))
	}
}

// BenchmarkExploreRaft3 reports the explorer's throughput on the 3-server
// raft bounds of issue 2, single worker, to compare with TLC's.
func BenchmarkExploreRaft3(b *testing.B) {
	m, err := NewModel(tlcRaftCounts[2].cfg)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		res, err := Explore(m, Options{Workers: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Distinct)/res.Elapsed.Seconds(), "distinct/s")
		b.ReportMetric(float64(res.Generated)/res.Elapsed.Seconds(), "generated/s")
	}
}

// TestSimulateReachesTerm3 shows, in every test run, that the walks at the
// full durable bounds reach the corruption stories end to end: a member
// truncated after a commit, a truncated voter asked, a repair, and a leader
// elected after a corruption, with no invariant broken on the way.
func TestSimulateReachesTerm3(t *testing.T) {
	m, err := NewModel(Config{Profile: ProfileDurable, Servers: 3, Values: 1, MaxTerm: 3, MaxLog: 2, MaxDup: 1,
		MaxMsgs: 2, Crashes: 1, Corruptions: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Simulate(m, SimOptions{Walks: 3000, Depth: 100, Seed: 1, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("violation %s: %s", res.Violation.Invariant, res.Violation.Detail)
	}
	want := []string{"CorruptAfterCommit", "TruncatedVoterAsked", "FenceReleased", "LeaderAfterCorruption", "ConflictTruncates"}
	if err := CheckReached(res.Reached, want); err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Reached {
		if r.Name == "FenceReleased" {
			checkSteps(t, m, r.Witness())
		}
	}
}
