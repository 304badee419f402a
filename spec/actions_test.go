package spec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var (
	e1 = Entry{Term: 1, Value: 1}
	e2 = Entry{Term: 2, Value: 1}
	e3 = Entry{Term: 3, Value: 1}
)

func testModel(t *testing.T, p Profile, bugs Bug) *Model {
	t.Helper()
	return testModelProduction(t, p, bugs, false)
}

func testModelProduction(t *testing.T, p Profile, bugs Bug, production bool) *Model {
	t.Helper()
	c := Config{Profile: p, Servers: 3, Values: 2, MaxTerm: 9, MaxLog: 9, MaxDup: 9, MaxMsgs: 99, Production: production}
	if p == ProfileDurable {
		c.Crashes, c.Corruptions, c.Bugs = 2, 1, bugs
	}
	m, err := NewModel(c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// successors collects what one action instance yields.
func successors(act func(Emit)) []Step {
	var out []Step
	act(func(n State, l Label) { out = append(out, Step{Label: l, State: &n}) })
	return out
}

// actionCase is one row: a pre-state, an action, and the expected
// successors, each given as the changes it makes to the pre-state.
type actionCase struct {
	name       string
	profile    Profile
	production bool
	bugs       Bug
	pre        func(s *State)
	act        func(m *Model, s *State, emit Emit)
	want       []func(n *State) // nil: the action is not enabled
}

func runActionCases(t *testing.T, cases []actionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := testModelProduction(t, tc.profile, tc.bugs, tc.production)
			s := m.Init()
			if tc.pre != nil {
				tc.pre(s)
			}
			pre := *s
			got := successors(func(emit Emit) { tc.act(m, s, emit) })
			if diff := cmp.Diff(pre, *s); diff != "" {
				t.Fatalf("the action mutated its pre-state (-before +after):\n%s", diff)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d successors, want %d: %v", len(got), len(tc.want), got)
			}
			for k, change := range tc.want {
				want := pre
				change(&want)
				if diff := cmp.Diff(want, *got[k].State, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("successor %d (%v) differs (-want +got):\n%s", k, got[k].Label, diff)
				}
				if msg := TypeOK(m, got[k].State); msg != "" {
					t.Errorf("successor %d: TypeOK: %s", k, msg)
				}
			}
		})
	}
}

func leader(s *State, i ServerID, term uint8, log Log) {
	s.CurrentTerm[i], s.State[i], s.Log[i] = term, Leader, log
	for j := ServerID(1); j <= 3; j++ {
		s.NextIndex[i][j] = uint8(log.Len() + 1)
	}
}

func TestRaftActions(t *testing.T) {
	rvReq := Message{Mtype: RequestVoteRequest, Mterm: 2, MlastLogTerm: 1, MlastLogIndex: 1, Msource: 1, Mdest: 2}
	aeReq := Message{Mtype: AppendEntriesRequest, Mterm: 2, MprevLogIndex: 1, MprevLogTerm: 1,
		Mentries: LogOf(e2), Mlog: LogOf(e1, e2), McommitIndex: 1, Msource: 1, Mdest: 2}
	cases := []actionCase{
		{name: "Restart keeps term, vote and log", pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1))
			s.VotedFor[1], s.CommitIndex[1], s.MatchIndex[1][2] = 1, 1, 1
			s.VotesGranted[1], s.VotesResponded[1] = 3, 3
		}, act: func(m *Model, s *State, e Emit) { m.Restart(s, 1, e) }, want: []func(*State){func(n *State) {
			n.State[1], n.CommitIndex[1], n.MatchIndex[1][2] = Follower, 0, 0
			n.VotesGranted[1], n.VotesResponded[1] = 0, 0
			n.NextIndex[1] = [MaxServers + 1]uint8{0, 1, 1, 1}
		}}},
		{name: "Timeout starts an election", act: func(m *Model, s *State, e Emit) { m.Timeout(s, 2, e) },
			want: []func(*State){func(n *State) { n.State[2], n.CurrentTerm[2] = Candidate, 2 }}},
		{name: "Timeout is not enabled on a leader", pre: func(s *State) { leader(s, 2, 2, "") },
			act: func(m *Model, s *State, e Emit) { m.Timeout(s, 2, e) }},
		{name: "RequestVote to itself is allowed", pre: func(s *State) {
			s.State[1], s.CurrentTerm[1], s.Log[1] = Candidate, 2, LogOf(e1)
		}, act: func(m *Model, s *State, e Emit) { m.RequestVote(s, 1, 1, e) }, want: []func(*State){func(n *State) {
			n.Messages = []BagEntry{{M: Message{Mtype: RequestVoteRequest, Mterm: 2, MlastLogTerm: 1, MlastLogIndex: 1, Msource: 1, Mdest: 1}, N: 1}}
		}}},
		{name: "RequestVote not again to a server that responded", pre: func(s *State) {
			s.State[1], s.VotesResponded[1] = Candidate, ServerSet(0).With(2)
		}, act: func(m *Model, s *State, e Emit) { m.RequestVote(s, 1, 2, e) }},
		{name: "BecomeLeader records the election", pre: func(s *State) {
			s.State[1], s.CurrentTerm[1], s.Log[1] = Candidate, 2, LogOf(e1)
			s.VotesGranted[1] = ServerSet(0).With(1).With(3)
			s.VoterLog[1] = VoterLog("").With(3, LogOf(e1))
		}, act: func(m *Model, s *State, e Emit) { m.BecomeLeader(s, 1, e) }, want: []func(*State){func(n *State) {
			n.State[1] = Leader
			n.NextIndex[1] = [MaxServers + 1]uint8{0, 2, 2, 2}
			n.Elections = []Election{{Eterm: 2, Eleader: 1, Elog: LogOf(e1), Evotes: n.VotesGranted[1], EvoterLog: n.VoterLog[1]}}
		}}},
		{name: "BecomeLeader needs a quorum", pre: func(s *State) {
			s.State[1], s.VotesGranted[1] = Candidate, ServerSet(0).With(1)
		}, act: func(m *Model, s *State, e Emit) { m.BecomeLeader(s, 1, e) }},
		{name: "ClientRequest appends in the leader's term", pre: func(s *State) { leader(s, 1, 3, LogOf(e1)) },
			act:  func(m *Model, s *State, e Emit) { m.ClientRequest(s, 1, 2, e) },
			want: []func(*State){func(n *State) { n.Log[1] = LogOf(e1, Entry{Term: 3, Value: 2}) }}},
		{name: "AdvanceCommitIndex commits a current-term entry on a quorum", pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1, e2))
			s.MatchIndex[1][3] = 2
		}, act: func(m *Model, s *State, e Emit) { m.AdvanceCommitIndex(s, 1, e) },
			want: []func(*State){func(n *State) { n.CommitIndex[1] = 2 }}},
		{name: "AdvanceCommitIndex does not commit an old-term entry alone", pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1))
			s.MatchIndex[1][3] = 1
		}, act: func(m *Model, s *State, e Emit) { m.AdvanceCommitIndex(s, 1, e) },
			want: []func(*State){func(n *State) {}}},
		{name: "AppendEntries sends one entry and clamps mcommitIndex", pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1, e2))
			s.NextIndex[1][2], s.CommitIndex[1] = 1, 2
		}, act: func(m *Model, s *State, e Emit) { m.AppendEntries(s, 1, 2, e) }, want: []func(*State){func(n *State) {
			n.Messages = []BagEntry{{M: Message{Mtype: AppendEntriesRequest, Mterm: 2, Mentries: LogOf(e1),
				Mlog: LogOf(e1, e2), McommitIndex: 1, Msource: 1, Mdest: 2}, N: 1}}
		}}},
		{name: "AppendEntries not to itself", pre: func(s *State) { leader(s, 1, 2, "") },
			act: func(m *Model, s *State, e Emit) { m.AppendEntries(s, 1, 1, e) }},
		{name: "UpdateTerm leaves the message in the bag", pre: func(s *State) {
			s.Messages = []BagEntry{{M: rvReq, N: 1}}
			s.State[2], s.VotedFor[2] = Candidate, 2
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, rvReq, e) }, want: []func(*State){func(n *State) {
			n.CurrentTerm[2], n.State[2], n.VotedFor[2] = 2, Follower, Nil
		}}},
		{name: "HandleRequestVoteRequest grants an up-to-date candidate", pre: func(s *State) {
			s.Messages = []BagEntry{{M: rvReq, N: 1}}
			s.CurrentTerm[2], s.Log[2] = 2, LogOf(e1)
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, rvReq, e) }, want: []func(*State){func(n *State) {
			n.VotedFor[2] = 1
			n.Messages = []BagEntry{{M: Message{Mtype: RequestVoteResponse, Mterm: 2, MvoteGranted: true,
				Mlog: LogOf(e1), Msource: 2, Mdest: 1}, N: 1}}
		}}},
		{name: "HandleRequestVoteRequest denies a candidate with a shorter log", pre: func(s *State) {
			s.Messages = []BagEntry{{M: rvReq, N: 1}}
			s.CurrentTerm[2], s.Log[2] = 2, LogOf(e1, e1)
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, rvReq, e) }, want: []func(*State){func(n *State) {
			n.Messages = []BagEntry{{M: Message{Mtype: RequestVoteResponse, Mterm: 2,
				Mlog: LogOf(e1, e1), Msource: 2, Mdest: 1}, N: 1}}
		}}},
		{name: "HandleRequestVoteResponse keeps the first voterLog", pre: func(s *State) {
			resp := Message{Mtype: RequestVoteResponse, Mterm: 2, MvoteGranted: true, Mlog: LogOf(e1), Msource: 2, Mdest: 1}
			s.Messages = []BagEntry{{M: resp, N: 2}}
			s.State[1], s.CurrentTerm[1] = Candidate, 2
			s.VotesGranted[1], s.VotesResponded[1] = ServerSet(0).With(2), ServerSet(0).With(2)
			s.VoterLog[1] = VoterLog("").With(2, LogOf(e3))
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, s.Messages[0].M, e) }, want: []func(*State){func(n *State) {
			n.Messages = []BagEntry{{M: n.Messages[0].M, N: 1}}
		}}},
		{name: "HandleAppendEntriesRequest rejects a stale term", pre: func(s *State) {
			m := aeReq
			m.Mterm = 1
			s.Messages = []BagEntry{{M: m, N: 1}}
			s.CurrentTerm[2] = 2
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, s.Messages[0].M, e) }, want: []func(*State){func(n *State) {
			n.Messages = []BagEntry{{M: Message{Mtype: AppendEntriesResponse, Mterm: 2, Msource: 2, Mdest: 1}, N: 1}}
		}}},
		{name: "HandleAppendEntriesRequest returns a candidate to follower, message stays", pre: func(s *State) {
			s.Messages = []BagEntry{{M: aeReq, N: 1}}
			s.CurrentTerm[2], s.State[2] = 2, Candidate
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, aeReq, e) },
			want: []func(*State){func(n *State) { n.State[2] = Follower }}},
		{name: "HandleAppendEntriesRequest appends, message stays", pre: func(s *State) {
			s.Messages = []BagEntry{{M: aeReq, N: 1}}
			s.CurrentTerm[2], s.Log[2] = 2, LogOf(e1)
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, aeReq, e) },
			want: []func(*State){func(n *State) { n.Log[2] = LogOf(e1, e2) }}},
		{name: "HandleAppendEntriesRequest removes one conflicting entry", pre: func(s *State) {
			s.Messages = []BagEntry{{M: aeReq, N: 1}}
			s.CurrentTerm[2], s.Log[2] = 2, LogOf(e1, e1, e1)
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, aeReq, e) },
			want: []func(*State){func(n *State) { n.Log[2] = LogOf(e1, e1) }}},
		{name: "HandleAppendEntriesRequest already done: success and commit", pre: func(s *State) {
			s.Messages = []BagEntry{{M: aeReq, N: 1}}
			s.CurrentTerm[2], s.Log[2] = 2, LogOf(e1, e2)
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, aeReq, e) }, want: []func(*State){func(n *State) {
			n.CommitIndex[2] = 1
			n.Messages = []BagEntry{{M: Message{Mtype: AppendEntriesResponse, Mterm: 2, Msuccess: true, MmatchIndex: 2, Msource: 2, Mdest: 1}, N: 1}}
		}}},
		{name: "HandleAppendEntriesResponse overwrites matchIndex", pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1, e2))
			s.MatchIndex[1][2] = 2
			s.Messages = []BagEntry{{M: Message{Mtype: AppendEntriesResponse, Mterm: 2, Msuccess: true, MmatchIndex: 1, Msource: 2, Mdest: 1}, N: 1}}
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, s.Messages[0].M, e) }, want: []func(*State){func(n *State) {
			n.MatchIndex[1][2], n.NextIndex[1][2], n.Messages = 1, 2, nil
		}}},
		{name: "HandleAppendEntriesResponse failure decrements nextIndex", pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1, e2))
			s.Messages = []BagEntry{{M: Message{Mtype: AppendEntriesResponse, Mterm: 2, Msource: 2, Mdest: 1}, N: 1}}
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, s.Messages[0].M, e) }, want: []func(*State){func(n *State) {
			n.NextIndex[1][2], n.Messages = 2, nil
		}}},
		{name: "DropStaleResponse", pre: func(s *State) {
			s.CurrentTerm[1] = 3
			s.Messages = []BagEntry{{M: Message{Mtype: RequestVoteResponse, Mterm: 2, Msource: 2, Mdest: 1}, N: 1}}
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, s.Messages[0].M, e) },
			want: []func(*State){func(n *State) { n.Messages = nil }}},
		{name: "DuplicateMessage", pre: func(s *State) { s.Messages = []BagEntry{{M: rvReq, N: 1}} },
			act:  func(m *Model, s *State, e Emit) { m.DuplicateMessage(s, rvReq, e) },
			want: []func(*State){func(n *State) { n.Messages = []BagEntry{{M: rvReq, N: 2}} }}},
		{name: "DropMessage", pre: func(s *State) { s.Messages = []BagEntry{{M: rvReq, N: 2}} },
			act:  func(m *Model, s *State, e Emit) { m.DropMessage(s, rvReq, e) },
			want: []func(*State){func(n *State) { n.Messages = []BagEntry{{M: rvReq, N: 1}} }}},
	}
	runActionCases(t, cases)
}

func TestDurableActions(t *testing.T) {
	aeReq := Message{Mtype: AppendEntriesRequest, Mterm: 3, MprevLogIndex: 1, MprevLogTerm: 1,
		Mentries: LogOf(e3), Mlog: LogOf(e1, e3), McommitIndex: 2, MleaderCommit: 2, Msource: 1, Mdest: 2}
	successReply := func(n *State) {
		n.Messages = []BagEntry{{M: Message{Mtype: AppendEntriesResponse, Mterm: 3, Msuccess: true, MmatchIndex: 2, Msource: 2, Mdest: 1}, N: 1}}
	}
	follower := func(s *State, log Log, durable uint8) {
		s.Messages = []BagEntry{{M: aeReq, N: 1}}
		s.CurrentTerm[2], s.Log[2], s.DurableLen[2] = 3, log, durable
	}
	rv := Message{Mtype: RequestVoteRequest, Mterm: 3, MlastLogTerm: 1, MlastLogIndex: 1, Msource: 1, Mdest: 2}
	denied := func(n *State) {
		n.Messages = []BagEntry{{M: Message{Mtype: RequestVoteResponse, Mterm: 3, Mlog: n.Log[2], Msource: 2, Mdest: 1}, N: 1}}
	}
	granted := func(n *State) {
		n.VotedFor[2] = 1
		n.Messages = []BagEntry{{M: Message{Mtype: RequestVoteResponse, Mterm: 3, MvoteGranted: true, Mlog: n.Log[2], Msource: 2, Mdest: 1}, N: 1}}
	}
	voter := func(log Log, durable, learned uint8, verdict Verdict) func(*State) {
		return func(s *State) {
			s.Messages = []BagEntry{{M: rv, N: 1}}
			s.CurrentTerm[2], s.Log[2], s.DurableLen[2], s.LearnedCommit[2] = 3, log, durable, learned
			if verdict == Truncated {
				s.Verdict[2], s.TruncatedAtTerm[2] = Truncated, 2
			}
		}
	}
	D := ProfileDurable
	cases := []actionCase{
		{name: "Flush makes the whole log durable", profile: D, pre: func(s *State) { s.Log[1] = LogOf(e1, e2) },
			act:  func(m *Model, s *State, e Emit) { m.Flush(s, 1, e) },
			want: []func(*State){func(n *State) { n.DurableLen[1] = 2 }}},
		{name: "Flush is not enabled with nothing to sync", profile: D,
			act: func(m *Model, s *State, e Emit) { m.Flush(s, 1, e) }},
		{name: "Crash keeps any prefix between durable and whole", profile: D, pre: func(s *State) {
			leader(s, 1, 2, LogOf(e1, e2, e2))
			s.DurableLen[1], s.CommitIndex[1], s.LearnedCommit[1] = 1, 1, 1
		}, act: func(m *Model, s *State, e Emit) { m.Crash(s, 1, e) }, want: func() []func(*State) {
			var out []func(*State)
			for k := 1; k <= 3; k++ {
				out = append(out, func(n *State) {
					n.State[1], n.CommitIndex[1], n.CrashesLeft = Follower, 0, 1
					n.NextIndex[1] = [MaxServers + 1]uint8{0, 1, 1, 1}
					n.Log[1], n.DurableLen[1] = LogOf(e1, e2, e2).Prefix(k), uint8(k)
				})
			}
			return out
		}()},
		{name: "Corrupt cuts below the durable prefix and remembers the term", profile: D, pre: func(s *State) {
			s.CurrentTerm[1], s.Log[1], s.DurableLen[1], s.LearnedCommit[1] = 2, LogOf(e1, e2), 2, 2
		}, act: func(m *Model, s *State, e Emit) { m.Corrupt(s, 1, e) }, want: func() []func(*State) {
			var out []func(*State)
			for k := 0; k <= 1; k++ {
				out = append(out, func(n *State) {
					n.Log[1], n.DurableLen[1] = LogOf(e1, e2).Prefix(k), uint8(k)
					n.Verdict[1], n.TruncatedAtTerm[1], n.CorruptionsLeft = Truncated, 2, 0
				})
			}
			return out
		}()},
		{name: "Corrupt never takes a quorum", profile: D, pre: func(s *State) {
			s.Log[1], s.DurableLen[1] = LogOf(e1), 1
			s.Verdict[2], s.TruncatedAtTerm[2] = Truncated, 1
		}, act: func(m *Model, s *State, e Emit) { m.Corrupt(s, 1, e) }},
		{name: "RequestVote advertises the durable tip", profile: D, pre: func(s *State) {
			s.State[1], s.CurrentTerm[1], s.Log[1], s.DurableLen[1], s.LearnedCommit[1] = Candidate, 3, LogOf(e1, e2), 1, 2
		}, act: func(m *Model, s *State, e Emit) { m.RequestVote(s, 1, 2, e) }, want: []func(*State){func(n *State) {
			n.Messages = []BagEntry{{M: Message{Mtype: RequestVoteRequest, Mterm: 3, MlastLogTerm: 1, MlastLogIndex: 1, Msource: 1, Mdest: 2}, N: 1}}
		}}},
		{name: "RequestVote with candidate-advertises-learned claims the learned commit", profile: D,
			bugs: BugCandidateAdvertisesLearned, pre: func(s *State) {
				s.State[1], s.CurrentTerm[1], s.Log[1], s.DurableLen[1], s.LearnedCommit[1] = Candidate, 3, LogOf(e1, e2), 1, 2
			}, act: func(m *Model, s *State, e Emit) { m.RequestVote(s, 1, 2, e) }, want: []func(*State){func(n *State) {
				n.Messages = []BagEntry{{M: Message{Mtype: RequestVoteRequest, Mterm: 3, MlastLogTerm: 1, MlastLogIndex: 2, Msource: 1, Mdest: 2}, N: 1}}
			}}},
		{name: "voter compares with its durable log only", profile: D, pre: voter(LogOf(e1, e2), 1, 0, Clean),
			act: func(m *Model, s *State, e Emit) { m.Receive(s, rv, e) }, want: []func(*State){granted}},
		{name: "voter denies below its learned commit", profile: D, pre: voter(LogOf(e1), 1, 2, Clean),
			act: func(m *Model, s *State, e Emit) { m.Receive(s, rv, e) }, want: []func(*State){denied}},
		{name: "TRUNCATED voter grants no vote", profile: D, pre: voter(LogOf(e1), 1, 0, Truncated),
			act: func(m *Model, s *State, e Emit) { m.Receive(s, rv, e) }, want: []func(*State){denied}},
		{name: "TRUNCATED voter grants with truncated-member-votes", profile: D, bugs: BugTruncatedMemberVotes,
			pre: voter(LogOf(e1), 1, 0, Truncated),
			act: func(m *Model, s *State, e Emit) { m.Receive(s, rv, e) }, want: []func(*State){granted}},
		{name: "promotion fence: behind its learned commit", profile: D, pre: func(s *State) {
			s.State[1], s.VotesGranted[1], s.Log[1], s.DurableLen[1], s.LearnedCommit[1] = Candidate, 3, LogOf(e1), 1, 2
		}, act: func(m *Model, s *State, e Emit) { m.BecomeLeader(s, 1, e) }},
		{name: "promotion fence: TRUNCATED", profile: D, pre: func(s *State) {
			s.State[1], s.VotesGranted[1], s.Verdict[1], s.TruncatedAtTerm[1] = Candidate, 3, Truncated, 1
		}, act: func(m *Model, s *State, e Emit) { m.BecomeLeader(s, 1, e) }},
		{name: "leader counts itself only at its durable index", profile: D, pre: func(s *State) {
			leader(s, 1, 2, LogOf(e2))
			s.MatchIndex[1][2] = 1
		}, act: func(m *Model, s *State, e Emit) { m.AdvanceCommitIndex(s, 1, e) },
			want: []func(*State){func(n *State) {}}},
		{name: "self-counts-appended commits from the page cache", profile: D, bugs: BugSelfCountsAppended, pre: func(s *State) {
			leader(s, 1, 2, LogOf(e2))
			s.MatchIndex[1][2] = 1
		}, act: func(m *Model, s *State, e Emit) { m.AdvanceCommitIndex(s, 1, e) }, want: []func(*State){func(n *State) {
			n.CommitIndex[1], n.LearnedCommit[1] = 1, 1
			n.Committed = []CommittedEntry{{Index: 1, Term: 2, CommitTerm: 2}}
		}}},
		{name: "commit records committed entries once, with their first commit term", profile: D, pre: func(s *State) {
			leader(s, 1, 3, LogOf(e2, e3))
			s.DurableLen[1], s.MatchIndex[1][2] = 2, 2
			s.Committed = []CommittedEntry{{Index: 1, Term: 2, CommitTerm: 2}}
		}, act: func(m *Model, s *State, e Emit) { m.AdvanceCommitIndex(s, 1, e) }, want: []func(*State){func(n *State) {
			n.CommitIndex[1], n.LearnedCommit[1] = 2, 2
			n.Committed = []CommittedEntry{{Index: 1, Term: 2, CommitTerm: 2}, {Index: 2, Term: 3, CommitTerm: 3}}
		}}},
		{name: "AppendEntries carries the unclamped commit index", profile: D, pre: func(s *State) {
			leader(s, 1, 3, LogOf(e1, e3))
			s.NextIndex[1][2], s.CommitIndex[1] = 1, 2
		}, act: func(m *Model, s *State, e Emit) { m.AppendEntries(s, 1, 2, e) }, want: []func(*State){func(n *State) {
			n.Messages = []BagEntry{{M: Message{Mtype: AppendEntriesRequest, Mterm: 3, Mentries: LogOf(e1),
				Mlog: LogOf(e1, e3), McommitIndex: 1, MleaderCommit: 2, Msource: 1, Mdest: 2}, N: 1}}
		}}},
		{name: "already done waits for the flush", profile: D, pre: func(s *State) { follower(s, LogOf(e1, e3), 1) },
			act: func(m *Model, s *State, e Emit) { m.Receive(s, aeReq, e) }},
		{name: "already done with follower-acks-appended replies before the flush", profile: D, bugs: BugFollowerAcksAppended,
			pre: func(s *State) { follower(s, LogOf(e1, e3), 1) },
			act: func(m *Model, s *State, e Emit) { m.Receive(s, aeReq, e) }, want: []func(*State){func(n *State) {
				n.CommitIndex[2], n.LearnedCommit[2] = 2, 2
				successReply(n)
			}}},
		{name: "already done when durable: success, learns the commit", profile: D, pre: func(s *State) { follower(s, LogOf(e1, e3), 2) },
			act: func(m *Model, s *State, e Emit) { m.Receive(s, aeReq, e) }, want: []func(*State){func(n *State) {
				n.CommitIndex[2], n.LearnedCommit[2] = 2, 2
				successReply(n)
			}}},
		{name: "fence releases on a newer leader's own-term commit", profile: D, pre: func(s *State) {
			follower(s, LogOf(e1, e3), 2)
			s.Verdict[2], s.TruncatedAtTerm[2] = Truncated, 2
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, aeReq, e) }, want: []func(*State){func(n *State) {
			n.CommitIndex[2], n.LearnedCommit[2], n.Verdict[2], n.TruncatedAtTerm[2] = 2, 2, Clean, 0
			successReply(n)
		}}},
		{name: "fence holds for a leader of the corruption's term", profile: D, pre: func(s *State) {
			follower(s, LogOf(e1, e3), 2)
			s.Verdict[2], s.TruncatedAtTerm[2] = Truncated, 3
		}, act: func(m *Model, s *State, e Emit) { m.Receive(s, aeReq, e) }, want: []func(*State){func(n *State) {
			n.CommitIndex[2], n.LearnedCommit[2] = 2, 2
			successReply(n)
		}}},
		{name: "conflict clamps the durable prefix", profile: D, pre: func(s *State) { follower(s, LogOf(e1, e2, e2), 3) },
			act:  func(m *Model, s *State, e Emit) { m.Receive(s, aeReq, e) },
			want: []func(*State){func(n *State) { n.Log[2], n.DurableLen[2] = LogOf(e1, e2), 2 }}},
	}
	runActionCases(t, cases)
}
