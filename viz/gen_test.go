package viz

import (
	"bytes"
	"testing"

	"github.com/durableraft/durableraft/trace"
)

// steadyTrace writes a version 2 trace of about events steps that the
// spec accepts: s1 wins an election with s2's vote, then replicates one
// client write after another to s2 and commits each (s3 stays behind at
// term 1): a long run with long logs, as a large impl/ trace has.
func steadyTrace(tb testing.TB, events int) []byte {
	var b bytes.Buffer
	w := trace.NewWriter(&b)
	write := func(e trace.Event) {
		if err := w.Write(e); err != nil {
			tb.Fatal(err)
		}
	}
	write(trace.Event{Action: "Init", Config: &trace.Config{Profile: "durable", Servers: 3, Values: 1, Production: true, Source: "test"}})
	type node struct {
		term                     int
		role, votedFor           string
		logLen, logged           int
		commit, durable, learned int
		appended                 []trace.Run
	}
	ns := map[string]*node{}
	for _, n := range []string{"s1", "s2", "s3"} {
		ns[n] = &node{term: 1, role: "Follower", votedFor: "Nil"}
	}
	ip := func(v int) *int { return &v }
	state := func(name string) *trace.NodeState {
		n := ns[name]
		keep := n.logged
		s := &trace.NodeState{CurrentTerm: n.term, State: n.role, VotedFor: n.votedFor, LogKeep: ip(keep),
			LogAppend: n.appended, CommitIndex: n.commit, DurableLen: ip(n.durable), LearnedCommit: ip(n.learned),
			Verdict: "CLEAN", TruncatedAtTerm: ip(0)}
		n.logged, n.appended = n.logLen, nil
		return s
	}
	step := func(action, name, peer string, msg *trace.Message, branch string) {
		write(trace.Event{Action: action, Node: name, Peer: peer, Msg: msg, Branch: branch, State: state(name)})
	}
	rvq := func(from, to string) *trace.Message {
		return &trace.Message{Mtype: "RequestVoteRequest", Mterm: 2, Msource: from, Mdest: to}
	}
	rvp := func(from, to string) *trace.Message {
		return &trace.Message{Mtype: "RequestVoteResponse", Mterm: 2, MvoteGranted: true, Msource: from, Mdest: to}
	}
	s1, s2 := ns["s1"], ns["s2"]
	s1.term, s1.role = 2, "Candidate"
	step("Timeout", "s1", "", nil, "")
	step("RequestVote", "s1", "s1", nil, "")
	s1.votedFor = "s1"
	step("HandleRequestVoteRequest", "s1", "s1", rvq("s1", "s1"), "")
	step("HandleRequestVoteResponse", "s1", "s1", rvp("s1", "s1"), "")
	step("RequestVote", "s1", "s2", nil, "")
	step("Persist", "s1", "", nil, "") // s1's term and vote durable: the request leaves
	s2.term = 2
	step("UpdateTerm", "s2", "s1", rvq("s1", "s2"), "")
	s2.votedFor = "s1"
	step("HandleRequestVoteRequest", "s2", "s1", rvq("s1", "s2"), "")
	step("Persist", "s2", "", nil, "") // s2's vote durable: the grant leaves
	step("HandleRequestVoteResponse", "s1", "s2", rvp("s2", "s1"), "")
	s1.role = "Leader"
	step("BecomeLeader", "s1", "", nil, "")
	for i := 1; 11+8*i <= events; i++ {
		s1.logLen++
		s1.appended = []trace.Run{{Term: 2, Values: []int{1}}}
		v := 1
		write(trace.Event{Action: "ClientRequest", Node: "s1", Value: &v, State: state("s1")})
		prevTerm := 0
		if i > 1 {
			prevTerm = 2
		}
		c := s1.commit
		req := &trace.Message{Mtype: "AppendEntriesRequest", Mterm: 2, MprevLogIndex: i - 1, MprevLogTerm: prevTerm,
			Mentries: []trace.Entry{{Term: 2, Value: 1}}, McommitIndex: c, MleaderCommit: ip(c), Msource: "s1", Mdest: "s2"}
		step("SendAppendEntries", "s1", "s2", req, "")
		s2.logLen++
		s2.appended = []trace.Run{{Term: 2, Values: []int{1}}}
		step("HandleAppendEntriesBatch", "s2", "s1", req, "append")
		s1.durable = i
		step("Flush", "s1", "", nil, "")
		s2.durable = i
		step("Flush", "s2", "", nil, "")
		s2.commit, s2.learned = max(s2.commit, c), max(s2.learned, c)
		step("HandleAppendEntriesBatch", "s2", "s1", req, "already-done")
		resp := &trace.Message{Mtype: "AppendEntriesResponse", Mterm: 2, Msuccess: true, MmatchIndex: i, Msource: "s2", Mdest: "s1"}
		step("HandleAppendEntriesResponseMax", "s1", "s2", resp, "")
		s1.commit, s1.learned = i, i
		step("AdvanceCommitIndex", "s1", "", nil, "")
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}
