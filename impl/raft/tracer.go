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

// DefaultTraceBudget is the crash and corruption budget TraceConfig
// declares when TraceParams leaves it 0: more restarts than a run has, and
// within TLC's 32-bit integers.
const DefaultTraceBudget = 1 << 20

// TraceParams describe an impl trace, for its Init event.
type TraceParams struct {
	// Voters are the cluster's members, in the order the trace lists them
	// (the spec's servers 1..len(Voters)).
	Voters []NodeID
	// Names name the nodes as Config.TraceNames does: an id missing from
	// it (or a nil map) is s<id>. Every node of the cluster must be given
	// the same map.
	Names map[NodeID]string
	// Crashes and Corruptions are the spec's budgets for the run: at
	// least its number of restarts, and of boots with a TRUNCATED verdict.
	// 0 means DefaultTraceBudget.
	Crashes, Corruptions int
	// BadCommits is the spec's CorruptLeaderCommit budget: how many
	// messages a test harness changed in flight (rafttest's
	// corrupt-commit). 0: none, and the config does not name it.
	BadCommits int
	// PowerLosses is the spec's PowerLoss budget: at least the number of
	// boots with an AMBIGUOUS verdict (traced as PowerLoss). 0: none, and
	// the config does not name it (nor the power-loss switches).
	PowerLosses int
	// Bugs are the test switches the nodes run with (Config.TestingBugs).
	Bugs Bug
	// Membership: configurations are log entries and ChangeConfig a step
	// (docs/membership.md). Voters are then every node of the run, ids
	// 1..N (N <= 5) in order, so that node k is the spec's server k (a
	// configuration entry's value names servers by position), and
	// InitVoters the initial voters, nodes 1..InitVoters (0: all).
	Membership bool
	InitVoters int
	// Repair: the nodes run with Config.PeerRepair (the spec's -repair).
	Repair bool
}

// TraceConfig is the Init event's config for an impl trace: profile
// durable with the production actions, the voters' names, the budgets.
func TraceConfig(p TraceParams) (*trace.Config, error) {
	names, err := traceNames(p.Voters, p.Names)
	if err != nil {
		return nil, err
	}
	if p.PowerLosses < 0 || p.PowerLosses > trace.MaxIndex || (p.PowerLosses > 0 && p.Membership) {
		return nil, fmt.Errorf("raft: trace budget power losses=%d out of range (or with membership, which the spec's PowerLoss does not have)", p.PowerLosses)
	}
	if p.Crashes < 0 || p.Corruptions < 0 || p.Crashes > trace.MaxIndex || p.Corruptions > trace.MaxIndex {
		return nil, fmt.Errorf("raft: trace budgets crashes=%d corruptions=%d out of range", p.Crashes, p.Corruptions)
	}
	if p.BadCommits < 0 || p.BadCommits > trace.MaxIndex {
		return nil, fmt.Errorf("raft: trace budget badCommits=%d out of range", p.BadCommits)
	}
	if err := p.checkMembership(); err != nil {
		return nil, err
	}
	c := &trace.Config{Profile: "durable", Servers: len(names), Names: names, Values: TraceValues,
		Crashes: p.Crashes, Corruptions: p.Corruptions, BadCommits: p.BadCommits, Bugs: p.declaredBugs().String(), Production: true, Source: "impl",
		PowerLosses: p.PowerLosses}
	c.Membership, c.InitVoters, c.Repair = p.Membership, p.InitVoters, p.Repair
	c.MarkedVotes = p.Bugs&BugTruncatedWithholdsVote == 0 // the rule the core runs (ambiguous.go)
	if c.Crashes == 0 {
		c.Crashes = DefaultTraceBudget
	}
	if c.Corruptions == 0 {
		c.Corruptions = DefaultTraceBudget
	}
	return c, nil
}

// membershipBugs are the switches of the membership rules: without
// Membership no step is theirs, and the trace does not declare them (spec
// takes them with membership only).
const membershipBugs = BugConfigBeforeOwnTermCommit | BugConfigWhileUncommitted

// powerLossBugs are the switches of the ambiguous tail: without power
// losses no step is theirs, and the trace does not declare them (spec
// takes them with power losses only).
const powerLossBugs = BugAmbiguousTailClean | BugAmbiguousWithholdsVote

// declaredBugs are the switches a trace's config names: not the reporting
// ones, nor the first-boot confirmation's (a trace has no Wipe step: a
// wiped member's boot is refused by the checker whatever the switch says),
// and the membership, repair and power-loss ones only with their steps.
func (p *TraceParams) declaredBugs() Bug {
	b := p.Bugs &^ (ReportingBugs | WipeBugs | BugTruncatedWithholdsVote) // the last: markedVotes absent
	if !p.Membership {
		b &^= membershipBugs
	}
	if p.PowerLosses == 0 {
		b &^= powerLossBugs
	}
	if !p.Repair {
		b &^= RepairBugs
	}
	return b
}

func (p *TraceParams) checkMembership() error {
	if !p.Membership {
		if p.InitVoters != 0 {
			return fmt.Errorf("raft: trace: init voters need Membership")
		}
		return nil
	}
	if len(p.Voters) > traceMembershipServersMax || p.InitVoters < 0 || p.InitVoters > len(p.Voters) {
		return fmt.Errorf("raft: trace with membership: %d nodes (at most %d), %d initial voters", len(p.Voters), traceMembershipServersMax, p.InitVoters)
	}
	for k, id := range p.Voters {
		if id != NodeID(k+1) {
			return fmt.Errorf("raft: trace with membership: the nodes must be 1..%d in order, not %v", len(p.Voters), p.Voters)
		}
	}
	return nil
}

// traceNames is the names of voters, in order, checked: valid trace
// names (trace.ValidName), one per voter, no two alike.
func traceNames(voters []NodeID, names map[NodeID]string) ([]string, error) {
	if len(voters) == 0 || len(voters) > trace.MaxServers {
		return nil, fmt.Errorf("raft: tracing %d voters, want 1..%d", len(voters), trace.MaxServers)
	}
	out := make([]string, len(voters))
	seen := map[string]NodeID{}
	for k, id := range voters {
		n := TraceName(names, id)
		if id == None || !trace.ValidName(n) {
			return nil, fmt.Errorf("raft: trace name %q of node %d is not a valid trace name", n, id)
		}
		if other, dup := seen[n]; dup && other != id {
			return nil, fmt.Errorf("raft: nodes %d and %d have one trace name %q", other, id, n)
		}
		seen[n], out[k] = id, n
	}
	return out, nil
}

// traceValue maps an entry's data to a value in 1..TraceValues (FNV-1a),
// or a configuration entry's to the spec's configuration value
// (configTraceValue).
func traceValue(data []byte) int {
	if IsConfigEntry(data) {
		return configTraceValue(data)
	}
	h := uint32(2166136261)
	for _, b := range data {
		h ^= uint32(b)
		h *= 16777619
	}
	return 1 + int(h%TraceValues)
}

// TraceName is the trace's name of a node: names[id], or s<id> when names
// has none; None is "Nil".
func TraceName(names map[NodeID]string, id NodeID) string {
	if id == None {
		return "Nil"
	}
	if n, ok := names[id]; ok {
		return n
	}
	return "s" + strconv.FormatUint(uint64(id), 10)
}

// TraceMessage maps a message to the spec's (without mlog), nodes named by
// names (see TraceName), or nil for the message types the spec does not
// have. Round, Seq, the hint and Transfer are abstracted away.
func TraceMessage(m *Message, names map[NodeID]string) *trace.Message {
	t := &trace.Message{Mterm: int(m.Term), Msource: TraceName(names, m.From), Mdest: TraceName(names, m.To)}
	switch m.Type {
	case MsgVote:
		t.Mtype, t.MlastLogTerm, t.MlastLogIndex = "RequestVoteRequest", int(m.LastLogTerm), int(m.LastLogIndex)
	case MsgVoteResp:
		t.Mtype, t.MvoteGranted, t.Mambiguous = "RequestVoteResponse", m.Granted, m.Ambiguous
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
	case MsgRepair:
		t.Mtype = "RepairRequest"
	case MsgRepairResp:
		// The answer by its tip: the requester is not told the rest of
		// the peer's durable log (spec tracerepair.go).
		t.Mtype, t.MlastLogTerm, t.MlastLogIndex = "RepairResponse", int(m.LastLogTerm), int(m.LastLogIndex)
	case MsgSnap:
		// Mprefix, the leader's log up to the snapshot, is the tracer's to
		// fill in: the message does not carry it.
		c := int(m.LeaderCommit)
		t.Mtype, t.MleaderCommit = "InstallSnapshotRequest", &c
	default:
		return nil
	}
	return t
}

type tracer struct {
	n     *Node
	sink  TraceSink
	names map[NodeID]string
	name  string
	log   []trace.Entry // term and value of every entry of n.log
	// keep is how many entries of log are as the last event logged them:
	// its length then, lowered by every truncation since. An event logs
	// the change (trace version 2): keep them, append the rest.
	keep int
}

// newTracer starts tracing a booted node. The trace keeps the whole log:
// below storage's compaction base it takes the boot's TracePrefix (from the
// snapshot), above it storage's entries.
func newTracer(n *Node, prefix []trace.Entry) (*tracer, error) {
	base := n.log.first - 1
	if uint64(len(prefix)) < base {
		return nil, fmt.Errorf("raft: tracing needs the whole log; storage starts at %d and the snapshot's trace prefix has %d entries",
			n.log.first, len(prefix))
	}
	t := &tracer{n: n, sink: n.cfg.Trace, names: n.cfg.TraceNames, name: TraceName(n.cfg.TraceNames, n.id)}
	t.log = append(t.log, prefix[:base]...)
	for lo := n.log.first; lo <= n.log.last; {
		ents, err := n.log.entries(lo, n.log.last+1, 1<<30)
		if err != nil {
			return nil, fmt.Errorf("raft: tracing: reading the log: %w", err)
		}
		t.appendLog(ents...)
		lo += uint64(len(ents))
	}
	t.keep = len(t.log)
	return t, nil
}

func (t *tracer) appendLog(ents ...Entry) {
	for _, e := range ents {
		t.log = append(t.log, trace.Entry{Term: int(e.Term), Value: traceValue(e.Data)})
	}
}

func (t *tracer) truncateLog(from uint64) {
	t.log = t.log[:from-1]
	t.keep = min(t.keep, len(t.log))
}

// logChange is the change of the log since the last event, and makes the
// log as it is now the last logged one.
func (t *tracer) logChange() (keep int, appended []trace.Run) {
	keep, appended = t.keep, trace.Runs(t.log[t.keep:])
	t.keep = len(t.log)
	return keep, appended
}

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
	keep, appended := t.logChange()
	return &trace.NodeState{
		CurrentTerm: int(n.hs.Term), State: role, VotedFor: TraceName(t.names, n.hs.Vote),
		LogKeep: &keep, LogAppend: appended, CommitIndex: int(n.log.committed),
		DurableLen: &d, LearnedCommit: &l, Verdict: n.verdictString(), TruncatedAtTerm: &ta,
	}
}

// event reports a step. peer is the action's j (the destination of a send,
// the source of a received message); m is the message received, or sent
// by SendAppendEntries.
func (t *tracer) event(action string, peer NodeID, m *Message, branch string) {
	e := trace.Event{Action: action, Node: t.name, Branch: branch, State: t.nodeState()}
	if peer != None {
		e.Peer = TraceName(t.names, peer)
	}
	if m != nil && action != "RequestVote" && action != "RequestRepair" {
		e.Msg = TraceMessage(m, t.names)
		if m.Type == MsgSnap && e.Msg != nil {
			e.Msg.Mprefix = trace.Runs(t.n.snaps.prefix)
		}
	}
	t.sink.Event(e)
}

// configTraceValue is spec's value of a configuration entry
// (spec.MemberConfig.Value, docs/membership.md): 13 + Σ d(k)·3^(k-1) over
// the trace's servers s1..s5, d = 0 (not a member), 1 (learner), 2
// (voter). A trace with membership names node k as its server k
// (TraceParams.Membership). A configuration naming a node beyond 5 has no
// spec value: 0, which the checker refuses.
func configTraceValue(data []byte) int {
	m, err := DecodeMembership(data)
	if err != nil {
		return 0
	}
	code := 0
	for _, l := range []struct {
		ids []NodeID
		d   int
	}{{m.Voters, 2}, {m.Learners, 1}} {
		for _, id := range l.ids { // DecodeMembership refuses id 0
			if id > traceMembershipServersMax {
				return 0
			}
			p := 1
			for k := NodeID(1); k < id; k++ {
				p *= 3
			}
			code += l.d * p
		}
	}
	return traceConfigValueBase + code
}

// The spec's configuration values (spec/membership.go).
const (
	traceConfigValueBase      = 13
	traceMembershipServersMax = 5
)

// changeConfig reports spec ChangeConfig: the leader appended the
// configuration entry data, changing server peer.
func (t *tracer) changeConfig(peer NodeID, data []byte) {
	v := configTraceValue(data)
	t.sink.Event(trace.Event{Action: "ChangeConfig", Node: t.name, Peer: TraceName(t.names, peer), Value: &v, State: t.nodeState()})
}

// repairSnapshot reports spec SendRepairSnapshot: the node answers the
// repair request req with its snapshot at index (the event's cut).
func (t *tracer) repairSnapshot(req *Message, index uint64) {
	k := int(index)
	t.sink.Event(trace.Event{Action: "SendRepairSnapshot", Node: t.name, Peer: TraceName(t.names, req.From), Msg: TraceMessage(req, t.names),
		Cut: &k, State: t.nodeState()})
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

// boot reports a restart: spec Crash, Corrupt when recovery found the log
// cut inside its durable prefix, or PowerLoss when it found the last batch
// damaged with nothing vouching for it (VerdictAmbiguous: the cut may be
// below the durable length, which Crash cannot do). The cut is the
// recovered log's length.
// The event logs the whole recovered log (keep nothing): this tracer does
// not know what the node's previous one logged last, and the recovered
// log need not be a prefix of it (a truncation brought back by a crash).
//
// A boot with a snapshot brings its commit index back as the snapshot's
// (everything up to it is committed): CrashFromSnapshot or
// CorruptFromSnapshot.
func (t *tracer) boot(v Verdict) {
	cut := len(t.log)
	t.keep = 0
	e := trace.Event{Action: "Crash", Node: t.name, Cut: &cut, State: t.nodeState()}
	switch v {
	case VerdictTruncated:
		e.Action = "Corrupt"
	case VerdictAmbiguous:
		e.Action = "PowerLoss"
	}
	if t.n.log.committed > 0 {
		e.Action += "FromSnapshot" // CrashFromSnapshot, CorruptFromSnapshot, PowerLossFromSnapshot
	}
	t.sink.Event(e)
}
