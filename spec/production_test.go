package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/trace"
)

func productionModel(t *testing.T, bugs Bug) *Model {
	t.Helper()
	m, err := NewModel(Config{Profile: ProfileDurable, Servers: 3, Values: 2, MaxTerm: 9, MaxLog: 9, MaxDup: 9,
		MaxMsgs: 99, Crashes: 2, Corruptions: 1, Bugs: bugs, Production: true})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runProductionCases is runActionCases on the production model.
func runProductionCases(t *testing.T, cases []actionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := productionModel(t, tc.bugs)
			s := m.Init()
			if tc.pre != nil {
				tc.pre(s)
			}
			for _, i := range m.servers { // the pre-state's hard state is durable
				s.Persisted[i] = hardStateOf(s, i)
			}
			pre := *s
			got := successors(func(emit Emit) { tc.act(m, s, emit) })
			if len(got) != len(tc.want) {
				t.Fatalf("%d successors, want %d: %v", len(got), len(tc.want), got)
			}
			for k, change := range tc.want {
				want := pre
				change(&want)
				if d := diffStates(&want, got[k].State); d != "" {
					t.Errorf("successor %d (%v) differs: %s", k, got[k].Label, d)
				}
				if msg := TypeOK(m, got[k].State); msg != "" {
					t.Errorf("successor %d: TypeOK: %s", k, msg)
				}
			}
		})
	}
}

// diffStates compares the encodings (sets and bags are canonical).
func diffStates(want, got *State) string {
	m, _ := NewModel(Config{Profile: ProfileDurable, Servers: 3, Values: 2, MaxTerm: 9, MaxLog: 9, MaxDup: 9, MaxMsgs: 99,
		Production: true})
	if bytes.Equal(m.Encode(nil, want), m.Encode(nil, got)) {
		return ""
	}
	var b strings.Builder
	for _, i := range m.servers {
		a, _ := json.Marshal(m.NodeState(want, i))
		c, _ := json.Marshal(m.NodeState(got, i))
		if !bytes.Equal(a, c) {
			fmt.Fprintf(&b, "%v: got %s want %s; ", i, c, a)
		}
	}
	if len(want.Messages) != len(got.Messages) {
		b.WriteString("messages differ")
	} else {
		for k := range want.Messages {
			if want.Messages[k] != got.Messages[k] {
				b.WriteString("message " + got.Messages[k].M.String() + " want " + want.Messages[k].M.String() + "; ")
			}
		}
	}
	if b.Len() == 0 {
		b.WriteString("history variables differ")
	}
	return b.String()
}

func TestProductionActions(t *testing.T) {
	e22 := Entry{Term: 2, Value: 2}
	batch := Message{Mtype: AppendEntriesRequest, Mterm: 2, MprevLogIndex: 1, MprevLogTerm: 1,
		Mentries: LogOf(e2, e22), Mlog: LogOf(e1, e2, e22), McommitIndex: 2, MleaderCommit: 2, Msource: 1, Mdest: 2}
	success := func(match uint8) Message {
		return Message{Mtype: AppendEntriesResponse, Mterm: 2, Msuccess: true, MmatchIndex: match, Msource: 2, Mdest: 1}
	}
	cases := []actionCase{
		{name: "SendAppendEntries sends every range of the leader's log", pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1, e2))
			s.CommitIndex[1] = 1
		}, act: func(m *Model, s *State, e Emit) { m.SendAppendEntries(s, 1, 2, e) }, want: func() []func(*State) {
			var out []func(*State)
			log := LogOf(e1, e2)
			for prev := 0; prev <= 2; prev++ {
				for last := prev; last <= 2; last++ {
					var pt uint8
					if prev > 0 {
						pt = log.Term(prev)
					}
					msg := Message{Mtype: AppendEntriesRequest, Mterm: 2, MprevLogIndex: uint8(prev), MprevLogTerm: pt,
						Mentries: log.SubSeq(prev+1, last), Mlog: log, McommitIndex: min(1, uint8(last)),
						MleaderCommit: 1, Msource: 1, Mdest: 2}
					out = append(out, func(n *State) { n.Messages = []BagEntry{{M: msg, N: 1}} })
				}
			}
			return out
		}()},
		{name: "SendAppendEntries only from a leader, not to itself", pre: func(s *State) { leader(s, 1, 2, LogOf(e1)) },
			act: func(m *Model, s *State, e Emit) { m.SendAppendEntries(s, 1, 1, e); m.SendAppendEntries(s, 2, 1, e) }},
		{name: "HandleAppendEntriesBatch appends the missing suffix at once", pre: func(s *State) {
			s.Messages = []BagEntry{{M: batch, N: 1}}
			s.CurrentTerm[2], s.Log[2] = 2, LogOf(e1)
		}, act: func(m *Model, s *State, e Emit) { m.HandleAppendEntriesBatch(s, 2, 1, batch, e) },
			want: []func(*State){func(n *State) { n.Log[2] = LogOf(e1, e2, e22) }}},
		{name: "HandleAppendEntriesBatch appends after a matching prefix of the batch", pre: func(s *State) {
			s.Messages = []BagEntry{{M: batch, N: 1}}
			s.CurrentTerm[2], s.Log[2] = 2, LogOf(e1, e2)
		}, act: func(m *Model, s *State, e Emit) { m.HandleAppendEntriesBatch(s, 2, 1, batch, e) },
			want: []func(*State){func(n *State) { n.Log[2] = LogOf(e1, e2, e22) }}},
		{name: "HandleAppendEntriesBatch truncates at the first conflict and clamps durableLen", pre: func(s *State) {
			s.Messages = []BagEntry{{M: batch, N: 1}}
			s.CurrentTerm[2], s.Log[2], s.DurableLen[2] = 2, LogOf(e1, e2, e1, e1), 4
		}, act: func(m *Model, s *State, e Emit) { m.HandleAppendEntriesBatch(s, 2, 1, batch, e) },
			want: []func(*State){func(n *State) { n.Log[2], n.DurableLen[2] = LogOf(e1, e2), 2 }}},
		{name: "HandleAppendEntriesBatch waits for durability before success", pre: func(s *State) {
			s.Messages = []BagEntry{{M: batch, N: 1}}
			s.CurrentTerm[2], s.Log[2], s.DurableLen[2] = 2, LogOf(e1, e2, e22), 2
		}, act: func(m *Model, s *State, e Emit) { m.HandleAppendEntriesBatch(s, 2, 1, batch, e) }},
		{name: "HandleAppendEntriesBatch acknowledges with follower-acks-appended", bugs: BugFollowerAcksAppended, pre: func(s *State) {
			s.Messages = []BagEntry{{M: batch, N: 1}}
			s.CurrentTerm[2], s.Log[2], s.DurableLen[2] = 2, LogOf(e1, e2, e22), 2
		}, act: func(m *Model, s *State, e Emit) { m.HandleAppendEntriesBatch(s, 2, 1, batch, e) },
			want: []func(*State){func(n *State) {
				n.CommitIndex[2], n.LearnedCommit[2] = 2, 2
				n.Messages = []BagEntry{{M: success(3), N: 1}}
			}}},
		{name: "HandleAppendEntriesBatch already done: commitIndex never falls, learnedCommit from the unclamped commit", pre: func(s *State) {
			stale := batch
			stale.McommitIndex, stale.MleaderCommit = 1, 3
			s.Messages = []BagEntry{{M: stale, N: 1}}
			s.CurrentTerm[2], s.Log[2], s.DurableLen[2], s.CommitIndex[2] = 2, LogOf(e1, e2, e22), 3, 2
		}, act: func(m *Model, s *State, e Emit) { m.HandleAppendEntriesBatch(s, 2, 1, s.Messages[0].M, e) },
			want: []func(*State){func(n *State) {
				n.LearnedCommit[2] = 3
				n.Messages = []BagEntry{{M: success(3), N: 1}}
			}}},
		{name: "HandleAppendEntriesBatch releases the fence by FenceReleases", pre: func(s *State) {
			s.Messages = []BagEntry{{M: batch, N: 1}}
			s.CurrentTerm[2], s.Log[2], s.DurableLen[2] = 2, LogOf(e1, e2, e22), 3
			s.Verdict[2], s.TruncatedAtTerm[2] = Truncated, 1
		}, act: func(m *Model, s *State, e Emit) { m.HandleAppendEntriesBatch(s, 2, 1, batch, e) },
			want: []func(*State){func(n *State) {
				n.CommitIndex[2], n.LearnedCommit[2] = 2, 2
				n.Verdict[2], n.TruncatedAtTerm[2] = Clean, 0
				// The release is hard state: the reply waits for it to be durable.
				n.Messages, n.Held[2] = nil, []BagEntry{{M: success(3), N: 1}}
			}}},
		{name: "HandleAppendEntriesBatch keeps the fence while the leader's commit is beyond what the request matches", pre: func(s *State) {
			// s2 holds e22 (the leader's own-term entry 3) durably, but the
			// request matches only entry 1: FenceReleases' c <= matched,
			// whatever s2's log holds beyond it.
			hb := Message{Mtype: AppendEntriesRequest, Mterm: 2, MprevLogIndex: 1, MprevLogTerm: 1,
				Mlog: LogOf(e1, e2, e22), McommitIndex: 1, MleaderCommit: 3, Msource: 1, Mdest: 2}
			s.Messages = []BagEntry{{M: hb, N: 1}}
			s.CurrentTerm[2], s.Log[2], s.DurableLen[2] = 2, LogOf(e1, e2, e22), 3
			s.Verdict[2], s.TruncatedAtTerm[2] = Truncated, 1
		}, act: func(m *Model, s *State, e Emit) { m.HandleAppendEntriesBatch(s, 2, 1, s.Messages[0].M, e) },
			want: []func(*State){func(n *State) {
				// learnedCommit takes what the request proves: min(3, 1+0).
				n.CommitIndex[2], n.LearnedCommit[2] = 1, 1
				n.Messages = []BagEntry{{M: success(1), N: 1}}
			}}},
		{name: "HandleAppendEntriesBatch rejects a missing prefix", pre: func(s *State) {
			s.Messages = []BagEntry{{M: batch, N: 1}}
			s.CurrentTerm[2] = 2
		}, act: func(m *Model, s *State, e Emit) { m.HandleAppendEntriesBatch(s, 2, 1, batch, e) },
			want: []func(*State){func(n *State) {
				n.Messages = []BagEntry{{M: Message{Mtype: AppendEntriesResponse, Mterm: 2, Msource: 2, Mdest: 1}, N: 1}}
			}}},
		{name: "HandleAppendEntriesResponseMax keeps the larger match", pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1, e2, e22))
			s.MatchIndex[1][2], s.NextIndex[1][2] = 3, 4
			s.Messages = []BagEntry{{M: success(1), N: 1}}
		}, act: func(m *Model, s *State, e Emit) { m.HandleAppendEntriesResponseMax(s, 1, 2, success(1), e) },
			want: []func(*State){func(n *State) { n.Messages = nil }}},
		{name: "HandleAppendEntriesResponseMax raises match and next", pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1, e2, e22))
			s.MatchIndex[1][2], s.NextIndex[1][2] = 1, 2
			s.Messages = []BagEntry{{M: success(3), N: 1}}
		}, act: func(m *Model, s *State, e Emit) { m.HandleAppendEntriesResponseMax(s, 1, 2, success(3), e) },
			want: []func(*State){func(n *State) { n.MatchIndex[1][2], n.NextIndex[1][2], n.Messages = 3, 4, nil }}},
		{name: "FlushTo makes each proper prefix durable", pre: func(s *State) { s.Log[2] = LogOf(e1, e1, e1) },
			act:  func(m *Model, s *State, e Emit) { m.FlushTo(s, 2, e) },
			want: []func(*State){func(n *State) { n.DurableLen[2] = 1 }, func(n *State) { n.DurableLen[2] = 2 }}},
		{name: "StepDown keeps term and vote", pre: func(s *State) { leader(s, 1, 2, LogOf(e1)); s.VotedFor[1] = 1 },
			act:  func(m *Model, s *State, e Emit) { m.StepDown(s, 1, e) },
			want: []func(*State){func(n *State) { n.State[1] = Follower }}},
		{name: "StepDown not from a follower", act: func(m *Model, s *State, e Emit) { m.StepDown(s, 1, e) }},
	}
	runProductionCases(t, cases)
}

// TestProductionNeedsTheFlag: without Config.Production neither Next nor
// Step takes a production action, and a multi-entry request is not
// handled by raft.tla's handler in production.
func TestProductionNeedsTheFlag(t *testing.T) {
	plain, err := NewModel(Config{Profile: ProfileDurable, Servers: 3, Values: 1, MaxTerm: 9, MaxLog: 9, MaxDup: 9, MaxMsgs: 99})
	if err != nil {
		t.Fatal(err)
	}
	prod := productionModel(t, 0)
	s := plain.Init()
	leader(s, 1, 2, LogOf(e1, e2))
	var seen []Action
	plain.Next(s, func(_ State, l Label) { seen = append(seen, l.Action) })
	for _, a := range seen {
		if a.isProduction() {
			t.Fatalf("Next without Production took %v", a)
		}
	}
	l := Label{Action: ActStepDown, I: 1}
	n := 0
	plain.Step(s, l, func(State, Label) { n++ })
	if n != 0 {
		t.Fatal("Step without Production took StepDown")
	}
	prod.Step(s, l, func(State, Label) { n++ })
	if n != 1 {
		t.Fatal("Step with Production did not take StepDown")
	}
	multi := Message{Mtype: AppendEntriesRequest, Mterm: 2, Mentries: LogOf(e2, e2), Mlog: LogOf(e2, e2), Msource: 1, Mdest: 2}
	s.CurrentTerm[2] = 2
	s.Messages = []BagEntry{{M: multi, N: 1}}
	var labels []Label
	prod.Next(s, func(_ State, l Label) {
		if l.Action == ActHandleAppendEntriesRequest && l.Msg == multi {
			labels = append(labels, l)
		}
	})
	if len(labels) != 0 {
		t.Fatalf("raft.tla's handler took a multi-entry request in production: %v", labels)
	}
	if _, err := NewModel(Config{Profile: ProfileRaft, Servers: 3, Values: 1, MaxTerm: 1, MaxLog: 1, MaxDup: 1, Production: true}); err == nil {
		t.Fatal("profile raft accepted Production")
	}
}

// TestProductionHoldsSmall explores the production profile at the bounds of
// docs/refinement.md's first row and replays every reachability witness.
func TestProductionHoldsSmall(t *testing.T) {
	cfg := smallDurable(0)
	cfg.Production = true
	m, err := NewModel(cfg)
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
	if !res.Complete {
		t.Fatal("incomplete")
	}
	for _, r := range res.Reached {
		if r.Found {
			events := checkSteps(t, m, r.Witness())
			if !events[0].Config.Production {
				t.Fatal("the trace config lost the production flag")
			}
		}
	}
}

// TestProductionBugsStillViolate: the production actions do not hide the
// failures the bug switches replay.
func TestProductionBugsStillViolate(t *testing.T) {
	for _, bug := range []Bug{BugSelfCountsAppended, BugFollowerAcksAppended} {
		t.Run(bug.String(), func(t *testing.T) {
			cfg := smallDurable(bug)
			cfg.Production = true
			m, err := NewModel(cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Explore(m, Options{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			if res.Violation == nil {
				t.Fatal("no violation")
			}
			checkSteps(t, m, res.Violation.Trace)
		})
	}
}

// TestProductionTraces: production walks write traces that CheckTrace
// accepts, that say "production", and that the plain durable profile
// rejects as soon as they take a production action, or earlier, at a
// restart whose outcome only the production profile allows (a hard state
// undone inside its persistence window, a lower learnedCommit).
func TestProductionTraces(t *testing.T) {
	m := productionModel(t, 0)
	m.MaxLog, m.MaxTerm, m.MaxMsgs, m.MaxDup = 3, 3, 4, 1
	taken := map[Action]bool{}
	_, err := Simulate(m, SimOptions{Walks: 500, Depth: 150, Seed: 3, OnWalk: func(_ int, steps []Step) {
		var b bytes.Buffer
		if err := m.WriteTrace(&b, steps); err != nil {
			t.Error(err)
			return
		}
		events, err := trace.Decode(&b)
		if err != nil {
			t.Error(err)
			return
		}
		if err := CheckTrace(events); err != nil {
			t.Errorf("production walk rejected: %v", err)
			return
		}
		prodAt := -1
		for k, st := range steps[1:] {
			taken[st.Label.Action] = true
			if prodAt < 0 && st.Label.Action.isProduction() {
				prodAt = k + 1
			}
		}
		if prodAt < 0 {
			return
		}
		events[0].Config.Production = false
		err = CheckTrace(events)
		var mm *TraceMismatch
		restart := func(a Action) bool { return a == ActCrash || a == ActCorrupt }
		if err == nil || !errorsAs(err, &mm) || mm.Seq > prodAt || (mm.Seq < prodAt && !restart(steps[mm.Seq].Label.Action)) {
			t.Errorf("without production: %v, want a mismatch at event %d or at a restart before it", err, prodAt)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	for a := ActSendAppendEntries; a <= ActPersist; a++ {
		if !taken[a] {
			t.Errorf("no walk took %v", a)
		}
	}
}

func errorsAs(err error, mm **TraceMismatch) bool {
	if m, ok := err.(*TraceMismatch); ok {
		*mm = m
		return true
	}
	return false
}

func TestProductionActionNames(t *testing.T) {
	for _, name := range ProductionActions() {
		a, ok := ParseAction(name)
		if !ok || a.String() != name || !a.isProduction() {
			t.Errorf("%s: parsed %v %v", name, a, ok)
		}
		found := false
		for _, n := range trace.Actions {
			found = found || n == name
		}
		if !found {
			t.Errorf("%s is not in trace.Actions", name)
		}
	}
	m := productionModel(t, 0)
	if !strings.Contains(m.Config.String(), "production") {
		t.Error("Config.String does not say production")
	}
}

// TestFollowerLagReachable: with the clamp (a follower learns a commit only
// up to what the message proves it holds durably), a CLEAN follower can
// still be behind the commit index it learned: a leader commits through
// two followers before its own fdatasync, then steps down. That is why the
// core's boot policy treats a short lag as replication, not as the fence
// of row 2 (impl/raft testdata/replication_lag_leader.txt). The witness is
// replayed through the trace checker.
func TestFollowerLagReachable(t *testing.T) {
	m, err := NewModel(Config{Profile: ProfileDurable, Servers: 3, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 1, Production: true})
	if err != nil {
		t.Fatal(err)
	}
	without, err := ParseActions("DropMessage,DuplicateMessage")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Explore(m, Options{Workers: 2, Merge: true, Symmetry: true, Without: without})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("violation %s: %s", res.Violation.Invariant, res.Violation.Detail)
	}
	if err := CheckReached(res.Reached, []string{"FollowerLagsLearned"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Reached {
		if r.Name != "FollowerLagsLearned" {
			continue
		}
		steps := r.Witness()
		checkSteps(t, m, steps)
		var sawStepDown bool
		for _, st := range steps {
			sawStepDown = sawStepDown || st.Label.Action == ActStepDown
		}
		if !sawStepDown {
			t.Errorf("the witness reaches the lag without a leader stepping down: %v", steps[len(steps)-1].Label)
		}
	}
}
