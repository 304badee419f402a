package spec

import (
	"strings"
	"testing"
)

func TestSnapshotActions(t *testing.T) {
	e22 := Entry{Term: 2, Value: 2}
	snap := func(prefix Log, commit uint8) Message {
		return Message{Mtype: InstallSnapshotRequest, Mterm: 2, Mentries: prefix, MleaderCommit: commit, Msource: 1, Mdest: 2}
	}
	offer := snap(LogOf(e1, e2), 2)
	withHistory := func(m Message, log Log) Message { m.Mlog = log; return m }
	cases := []actionCase{
		{name: "SendSnapshot offers each prefix the commit index covers", pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1, e2, e22))
			s.CommitIndex[1] = 2
		}, act: func(m *Model, s *State, e Emit) { m.SendSnapshot(s, 1, 2, e) }, want: []func(*State){
			func(n *State) {
				n.Messages = []BagEntry{{M: withHistory(snap(LogOf(e1), 2), LogOf(e1, e2, e22)), N: 1}}
			},
			func(n *State) {
				n.Messages = []BagEntry{{M: withHistory(snap(LogOf(e1, e2), 2), LogOf(e1, e2, e22)), N: 1}}
			},
		}},
		{name: "SendSnapshot only from a leader, not to itself, not beyond the commit index", pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1, e2))
			s.Log[3] = LogOf(e1)
			s.CommitIndex[3] = 1
		}, act: func(m *Model, s *State, e Emit) {
			m.SendSnapshot(s, 1, 1, e)
			m.SendSnapshot(s, 3, 2, e)
			m.SendSnapshot(s, 1, 2, e)
		}},
		{name: "InstallSnapshot replaces a conflicting log; the offer stays in flight", pre: func(s *State) {
			s.Messages = []BagEntry{{M: offer, N: 1}}
			s.CurrentTerm[2], s.Log[2], s.DurableLen[2], s.LearnedCommit[2] = 2, LogOf(e1, e1, e1), 3, 1
		}, act: func(m *Model, s *State, e Emit) { m.InstallSnapshot(s, 2, 1, offer, e) }, want: []func(*State){func(n *State) {
			n.Log[2], n.DurableLen[2], n.CommitIndex[2], n.LearnedCommit[2] = LogOf(e1, e2), 2, 2, 2
		}}},
		{name: "InstallSnapshot keeps a higher learnedCommit", pre: func(s *State) {
			s.Messages = []BagEntry{{M: offer, N: 1}}
			s.CurrentTerm[2], s.LearnedCommit[2] = 2, 3
		}, act: func(m *Model, s *State, e Emit) { m.InstallSnapshot(s, 2, 1, offer, e) }, want: []func(*State){func(n *State) {
			n.Log[2], n.DurableLen[2], n.CommitIndex[2] = LogOf(e1, e2), 2, 2
		}}},
		{name: "InstallSnapshot not when the log holds its last entry", pre: func(s *State) {
			s.CurrentTerm[2], s.Log[2] = 2, LogOf(e1, e2, e22)
		}, act: func(m *Model, s *State, e Emit) { m.InstallSnapshot(s, 2, 1, offer, e) }},
		{name: "InstallSnapshot not when the commit index covers it", pre: func(s *State) {
			s.CurrentTerm[2], s.Log[2], s.CommitIndex[2] = 2, LogOf(e1, e1), 2
		}, act: func(m *Model, s *State, e Emit) { m.InstallSnapshot(s, 2, 1, offer, e) }},
		{name: "InstallSnapshot not of another term, nor on a candidate", pre: func(s *State) {
			s.CurrentTerm[2], s.CurrentTerm[3], s.State[3] = 3, 2, Candidate
		}, act: func(m *Model, s *State, e Emit) {
			m.InstallSnapshot(s, 2, 1, offer, e)
			o := offer
			o.Mdest = 3
			m.InstallSnapshot(s, 3, 1, o, e)
		}},
	}
	runProductionCases(t, cases)
}

// TestRestartFromSnapshot: CrashFromSnapshot and CorruptFromSnapshot are
// Crash and Corrupt with every commit index a snapshot can bring back
// (1..Min(commitIndex, kept)), and nothing else differs.
func TestRestartFromSnapshot(t *testing.T) {
	m := productionModel(t, 0)
	s := m.Init()
	s.CurrentTerm[2], s.Log[2], s.DurableLen[2], s.CommitIndex[2], s.LearnedCommit[2] = 2, LogOf(e1, e2, e2), 2, 2, 2
	type key struct {
		cut, learned, commit uint8
	}
	check := func(name string, base func(Emit), snap func(Emit), keepsWhole bool) {
		plain := map[key]State{}
		base(func(n State, l Label) { plain[key{l.Cut, n.LearnedCommit[2], 0}] = n })
		got := 0
		snap(func(n State, l Label) {
			got++
			if n.CommitIndex[2] < 1 || n.CommitIndex[2] > min(2, l.Cut) {
				t.Errorf("%s: commit index %d with cut %d", name, n.CommitIndex[2], l.Cut)
			}
			p, ok := plain[key{l.Cut, n.LearnedCommit[2], 0}]
			if !ok && !(keepsWhole && l.Cut == 2) {
				t.Errorf("%s: cut %d learned %d is no successor of the plain action", name, l.Cut, n.LearnedCommit[2])
				return
			}
			if ok {
				p.CommitIndex[2] = n.CommitIndex[2]
				if d := diffStates(&p, &n); d != "" {
					t.Errorf("%s: differs beyond the commit index: %s", name, d)
				}
			}
		})
		if got == 0 {
			t.Errorf("%s: no successor", name)
		}
	}
	check("CrashFromSnapshot", func(e Emit) { m.Crash(s, 2, e) }, func(e Emit) { m.CrashFromSnapshot(s, 2, e) }, false)
	check("CorruptFromSnapshot", func(e Emit) { m.Corrupt(s, 2, e) }, func(e Emit) { m.CorruptFromSnapshot(s, 2, e) }, true)
	s.CommitIndex[2] = 0
	m.CrashFromSnapshot(s, 2, func(State, Label) { t.Error("a restart from a snapshot without a commit index") })
}

// TestSnapshotCommitted: the invariant holds for a snapshot of committed
// entries and names the entry of one that is not.
func TestSnapshotCommitted(t *testing.T) {
	m := productionModel(t, 0)
	s := m.Init()
	s.Committed = []CommittedEntry{{Index: 1, Term: 1, CommitTerm: 1}}
	s.Messages = []BagEntry{{M: Message{Mtype: InstallSnapshotRequest, Mterm: 2, Mentries: LogOf(e1), Msource: 1, Mdest: 2}, N: 1}}
	if msg := SnapshotCommitted(m, s); msg != "" {
		t.Fatal(msg)
	}
	s.Messages = []BagEntry{{M: Message{Mtype: InstallSnapshotRequest, Mterm: 2, Mentries: LogOf(e1, e2), Msource: 1, Mdest: 2}, N: 1}}
	if msg := SnapshotCommitted(m, s); !strings.Contains(msg, "(index 2, term 2), which is not committed") {
		t.Fatalf("got %q", msg)
	}
}
