package raft

import (
	"fmt"
	"strconv"

	"github.com/durableraft/durableraft/trace"
)

// Trace emission. With Config.Trace set, the node reports every step that
// is a step of the spec (profile durable with the production actions) as a
// trace/ event: the action, the message it consumed or sent, the branch,
// and the node's post-state on the variables the refinement compares
// (docs/refinement.md). Steps that are no spec step (pre-votes, heartbeat
// bookkeeping, flow control) emit nothing. With Config.Trace nil every
// emission site is skipped behind one nil check: no allocation
// (BenchmarkStepTraceOff).

// TraceSink receives the events of a node. The event is the sink's to
// keep. Events of several nodes in one cluster must go to one trace in the
// order they happen.
type TraceSink interface {
	Event(e trace.Event)
}

// TraceValues is the number of values (raft.tla's Value) an impl trace
// declares: an entry's data maps to one of them (traceValue).
const TraceValues = 4

// TraceConfig is the Init event's config for an impl trace of servers
// nodes (ids 1..servers) with the given test switches. The crash and
// corruption budgets are the spec's largest: the trace's own events say how
// many it used.
func TraceConfig(servers int, bugs Bug) *trace.Config {
	return &trace.Config{Profile: "durable", Servers: servers, Values: TraceValues,
		Crashes: 200, Corruptions: 200, Bugs: bugs.String(), Production: true, Source: "impl"}
}

// traceValue maps an entry's data to a value in 1..TraceValues (FNV-1a).
func traceValue(data []byte) int {
	h := uint32(2166136261)
	for _, b := range data {
		h ^= uint32(b)
		h *= 16777619
	}
	return 1 + int(h%TraceValues)
}

// TraceServer is the trace's name of a node: s1..s9.
func TraceServer(id NodeID) string {
	if id == None {
		return "Nil"
	}
	return "s" + strconv.FormatUint(uint64(id), 10)
}

// TraceMessage maps a message to the spec's (without mlog), or nil for the
// message types the spec does not have. Round, Seq, the hint and Transfer
// are abstracted away.
func TraceMessage(m *Message) *trace.Message {
	t := &trace.Message{Mterm: int(m.Term), Msource: TraceServer(m.From), Mdest: TraceServer(m.To)}
	switch m.Type {
	case MsgVote:
		t.Mtype, t.MlastLogTerm, t.MlastLogIndex = "RequestVoteRequest", int(m.LastLogTerm), int(m.LastLogIndex)
	case MsgVoteResp:
		t.Mtype, t.MvoteGranted = "RequestVoteResponse", m.Granted
	case MsgApp:
		t.Mtype, t.MprevLogIndex, t.MprevLogTerm = "AppendEntriesRequest", int(m.PrevLogIndex), int(m.PrevLogTerm)
		t.Mentries = make([]trace.Entry, len(m.Entries))
		for k, e := range m.Entries {
			t.Mentries[k] = trace.Entry{Term: int(e.Term), Value: traceValue(e.Data)}
		}
		c := int(m.LeaderCommit)
		t.McommitIndex, t.MleaderCommit = int(m.Commit), &c
	case MsgAppResp:
		t.Mtype, t.Msuccess, t.MmatchIndex = "AppendEntriesResponse", m.Success, int(m.MatchIndex)
	default:
		return nil
	}
	return t
}

type tracer struct {
	n    *Node
	sink TraceSink
	name string
	log  []trace.Entry // term and value of every entry of n.log
}

func newTracer(n *Node) (*tracer, error) {
	if n.log.first != 1 {
		return nil, fmt.Errorf("raft: tracing needs the whole log; storage starts at %d", n.log.first)
	}
	t := &tracer{n: n, sink: n.cfg.Trace, name: TraceServer(n.id)}
	for lo := uint64(1); lo <= n.log.last; {
		ents, err := n.log.entries(lo, n.log.last+1, 1<<30)
		if err != nil {
			return nil, fmt.Errorf("raft: tracing: reading the log: %w", err)
		}
		t.appendLog(ents...)
		lo += uint64(len(ents))
	}
	return t, nil
}

func (t *tracer) appendLog(ents ...Entry) {
	for _, e := range ents {
		t.log = append(t.log, trace.Entry{Term: int(e.Term), Value: traceValue(e.Data)})
	}
}

func (t *tracer) truncateLog(from uint64) { t.log = t.log[:from-1] }

// nodeState is the node's post-state on the compared variables. The
// leader's nextIndex and matchIndex and the candidate's vote sets are left
// out (abstracted).
func (t *tracer) nodeState() *trace.NodeState {
	n := t.n
	role := "Follower"
	switch n.role {
	case RoleCandidate:
		role = "Candidate"
	case RoleLeader:
		role = "Leader"
	}
	d, l, ta := int(n.log.durable), int(n.hs.LearnedCommit), int(n.hs.TruncatedAtTerm)
	return &trace.NodeState{
		CurrentTerm: int(n.hs.Term), State: role, VotedFor: TraceServer(n.hs.Vote),
		Log: append([]trace.Entry{}, t.log...), CommitIndex: int(n.log.committed),
		DurableLen: &d, LearnedCommit: &l, Verdict: n.verdictString(), TruncatedAtTerm: &ta,
	}
}

// event reports a step. peer is the action's j (the destination of a send,
// the source of a received message); m is the message received, or sent
// by SendAppendEntries.
func (t *tracer) event(action string, peer NodeID, m *Message, branch string) {
	e := trace.Event{Action: action, Node: t.name, Branch: branch, State: t.nodeState()}
	if peer != None {
		e.Peer = TraceServer(peer)
	}
	if m != nil && action != "RequestVote" {
		e.Msg = TraceMessage(m)
	}
	t.sink.Event(e)
}

func (t *tracer) clientRequest(data []byte) {
	v := traceValue(data)
	e := trace.Event{Action: "ClientRequest", Node: t.name, Value: &v, State: t.nodeState()}
	t.sink.Event(e)
}

// flush reports a durable index that grew: Flush when it covers the whole
// log, FlushTo otherwise.
func (t *tracer) flush(whole bool) {
	if whole {
		t.event("Flush", None, nil, "")
	} else {
		t.event("FlushTo", None, nil, "")
	}
}

// boot reports a restart: spec Crash, or Corrupt when recovery found the
// log cut inside its durable prefix. The cut is the recovered log's length.
func (t *tracer) boot(corrupt bool) {
	cut := len(t.log)
	e := trace.Event{Action: "Crash", Node: t.name, Cut: &cut, State: t.nodeState()}
	if corrupt {
		e.Action = "Corrupt"
	}
	t.sink.Event(e)
}
