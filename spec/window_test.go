package spec

import "testing"

// The persistence window of the production profile, action by action
// (window.go, docs/durable-raft.md "The persistence window").
func TestWindowActions(t *testing.T) {
	D := ProfileDurable
	vote := func(term uint8, src, dst ServerID) Message {
		return Message{Mtype: RequestVoteRequest, Mterm: term, Msource: src, Mdest: dst}
	}
	persisted := func(term uint8, vote ServerID, truncAt uint8) Persisted {
		return Persisted{CurrentTerm: term, VotedFor: vote, TruncatedAtTerm: truncAt}
	}
	appResp := func(term uint8, match uint8) Message {
		return Message{Mtype: AppendEntriesResponse, Mterm: term, Msuccess: true, MmatchIndex: match, Msource: 1, Mdest: 2}
	}
	runActionCases(t, []actionCase{
		{name: "Timeout opens the window, with the log as its base", profile: D, production: true, pre: func(s *State) {
			s.Log[1], s.DurableLen[1] = LogOf(e1), 1
		}, act: func(m *Model, s *State, e Emit) { m.Timeout(s, 1, m.windowed(s, e)) }, want: []func(*State){
			func(n *State) {
				n.State[1], n.CurrentTerm[1] = Candidate, 2
				n.StaleLog[1], n.StaleDurable[1] = LogOf(e1), 1
			},
		}},
		{name: "a candidate in its window holds its vote requests, but not the one to itself", profile: D, production: true,
			pre: func(s *State) {
				s.State[1], s.CurrentTerm[1] = Candidate, 2
			}, act: func(m *Model, s *State, e Emit) {
				m.RequestVote(s, 1, 1, e)
				m.RequestVote(s, 1, 2, e)
			}, want: []func(*State){
				func(n *State) { n.Messages = []BagEntry{{M: vote(2, 1, 1), N: 1}} },
				func(n *State) { n.Held[1] = []BagEntry{{M: vote(2, 1, 2), N: 1}} },
			}},
		{name: "Persist makes the hard state durable and releases what was held", profile: D, production: true,
			pre: func(s *State) {
				s.State[1], s.CurrentTerm[1] = Candidate, 2
				s.Held[1] = []BagEntry{{M: vote(2, 1, 2), N: 1}}
			}, act: func(m *Model, s *State, e Emit) { m.Persist(s, 1, e) }, want: []func(*State){
				func(n *State) {
					n.Persisted[1] = persisted(2, Nil, 0)
					n.Held[1], n.Messages = nil, []BagEntry{{M: vote(2, 1, 2), N: 1}}
				},
			}},
		{name: "Persist is not enabled with the window closed", profile: D, production: true,
			act: func(m *Model, s *State, e Emit) { m.Persist(s, 1, e) }},
		{name: "no Flush inside the window", profile: D, production: true, pre: func(s *State) {
			s.CurrentTerm[1], s.Log[1] = 2, LogOf(e1)
		}, act: func(m *Model, s *State, e Emit) {
			m.Flush(s, 1, e)
			m.FlushTo(s, 1, e)
		}},
		{name: "a crash inside the window: the old hard state with the base, or the new one with the base or the log", profile: D,
			production: true, pre: func(s *State) {
				// Term 2 and a truncation of the durable entry 2 are not durable yet.
				s.CurrentTerm[1], s.Log[1], s.DurableLen[1] = 2, LogOf(e1), 1
				s.StaleLog[1], s.StaleDurable[1] = LogOf(e1, e1), 2
			}, act: func(m *Model, s *State, e Emit) { m.Crash(s, 1, e) }, want: []func(*State){
				func(n *State) { // nothing of the window is on disk
					n.CurrentTerm[1], n.Log[1], n.DurableLen[1], n.CrashesLeft = 1, LogOf(e1, e1), 2, 1
					n.StaleLog[1], n.StaleDurable[1] = "", 0
				},
				func(n *State) { // the hard state is, the truncation is not
					n.Persisted[1], n.Log[1], n.DurableLen[1], n.CrashesLeft = persisted(2, Nil, 0), LogOf(e1, e1), 2, 1
					n.StaleLog[1], n.StaleDurable[1] = "", 0
				},
				func(n *State) { // both are
					n.Persisted[1], n.CrashesLeft = persisted(2, Nil, 0), 1
					n.StaleLog[1], n.StaleDurable[1] = "", 0
				},
			}},
		{name: "a crash brings back any unsynced prefix of the base, and any lower learnedCommit", profile: D, production: true,
			pre: func(s *State) {
				s.VotedFor[1], s.Log[1], s.LearnedCommit[1] = 2, LogOf(e1), 1
				s.StaleLog[1] = LogOf(e1)
			}, act: func(m *Model, s *State, e Emit) { m.Crash(s, 1, e) }, want: []func(*State){
				// The old hard state (no vote) with the base, 0 or 1 entries.
				func(n *State) {
					n.VotedFor[1], n.Log[1], n.LearnedCommit[1], n.StaleLog[1], n.CrashesLeft = Nil, "", 0, "", 1
				},
				func(n *State) { n.VotedFor[1], n.Log[1], n.StaleLog[1], n.CrashesLeft = Nil, "", "", 1 },
				func(n *State) {
					n.VotedFor[1], n.DurableLen[1], n.LearnedCommit[1], n.StaleLog[1], n.CrashesLeft = Nil, 1, 0, "", 1
				},
				func(n *State) { n.VotedFor[1], n.DurableLen[1], n.StaleLog[1], n.CrashesLeft = Nil, 1, "", 1 },
				// The new one (the base adds nothing: the log extends it).
				func(n *State) {
					n.Persisted[1], n.Log[1], n.LearnedCommit[1], n.StaleLog[1], n.CrashesLeft = persisted(1, 2, 0), "", 0, "", 1
				},
				func(n *State) { n.Persisted[1], n.Log[1], n.StaleLog[1], n.CrashesLeft = persisted(1, 2, 0), "", "", 1 },
				func(n *State) {
					n.Persisted[1], n.DurableLen[1], n.LearnedCommit[1], n.StaleLog[1], n.CrashesLeft = persisted(1, 2, 0), 1, 0, "", 1
				},
				func(n *State) {
					n.Persisted[1], n.DurableLen[1], n.StaleLog[1], n.CrashesLeft = persisted(1, 2, 0), 1, "", 1
				},
			}},
		{name: "a crash drops what the window held", profile: D, production: true, pre: func(s *State) {
			s.CurrentTerm[1], s.VotedFor[1] = 2, 2
			s.Held[1] = []BagEntry{{M: Message{Mtype: RequestVoteResponse, Mterm: 2, MvoteGranted: true, Msource: 1, Mdest: 2}, N: 1}}
		}, act: func(m *Model, s *State, e Emit) { m.Crash(s, 1, e) }, want: []func(*State){
			func(n *State) { n.CurrentTerm[1], n.VotedFor[1], n.Held[1], n.CrashesLeft = 1, Nil, nil, 1 },
			func(n *State) { n.Persisted[1], n.Held[1], n.CrashesLeft = persisted(2, 2, 0), nil, 1 },
		}},
		{name: "Corrupt makes the TRUNCATED mark durable with the cut", profile: D, production: true, pre: func(s *State) {
			s.Log[1], s.DurableLen[1] = LogOf(e1), 1
		}, act: func(m *Model, s *State, e Emit) { m.Corrupt(s, 1, e) }, want: []func(*State){
			func(n *State) {
				n.Log[1], n.DurableLen[1], n.Verdict[1], n.TruncatedAtTerm[1] = "", 0, Truncated, 1
				n.Persisted[1], n.CorruptionsLeft = persisted(1, Nil, 1), 0
			},
		}},
		{name: "with mark-after-cut the mark waits for a Persist", profile: D, production: true, bugs: BugMarkAfterCut,
			pre: func(s *State) {
				s.Log[1], s.DurableLen[1] = LogOf(e1), 1
			}, act: func(m *Model, s *State, e Emit) { m.Corrupt(s, 1, e) }, want: []func(*State){
				func(n *State) {
					n.Log[1], n.DurableLen[1], n.Verdict[1], n.TruncatedAtTerm[1] = "", 0, Truncated, 1
					n.CorruptionsLeft = 0
				},
			}},
		{name: "with mark-after-cut a crash before the Persist boots the cut log CLEAN", profile: D, production: true,
			bugs: BugMarkAfterCut, pre: func(s *State) {
				s.Verdict[1], s.TruncatedAtTerm[1] = Truncated, 1
			}, act: func(m *Model, s *State, e Emit) { m.Crash(s, 1, e) }, want: []func(*State){
				func(n *State) { n.Verdict[1], n.TruncatedAtTerm[1], n.CrashesLeft = Clean, 0, 1 },
				func(n *State) { n.Persisted[1], n.CrashesLeft = persisted(1, Nil, 1), 1 },
			}},
		{name: "a heartbeat beyond the durable log is acknowledged at the durable index", profile: D, production: true,
			pre: func(s *State) {
				s.Log[1], s.DurableLen[1] = LogOf(e1, e1), 1
				s.Messages = []BagEntry{{M: Message{Mtype: AppendEntriesRequest, Mterm: 1, MprevLogIndex: 2, MprevLogTerm: 1,
					Msource: 2, Mdest: 1}, N: 1}}
			}, act: func(m *Model, s *State, e Emit) {
				m.HandleAppendEntriesBatch(s, 1, 2, s.Messages[0].M, e)
			}, want: []func(*State){
				func(n *State) { n.Messages = []BagEntry{{M: appResp(1, 1), N: 1}} },
			}},
	})
}
