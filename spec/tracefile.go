package spec

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/durableraft/durableraft/trace"
)

// This file converts between spec values and the trace/ format.

func serverName(id ServerID) string {
	if id == Nil {
		return "Nil"
	}
	return "s" + strconv.Itoa(int(id))
}

func traceEntries[T Int, L Seq[T, L]](l L) []trace.Entry {
	out := make([]trace.Entry, l.Len())
	for k := range out {
		e := l.At(k + 1)
		out[k] = trace.Entry{Term: int(e.Term), Value: int(e.Value)}
	}
	return out
}

// TraceMessage converts a message, leaving out the history field mlog.
func (m *Machine[T, L, V]) TraceMessage(msg MessageOf[T, L]) *trace.Message {
	t := &trace.Message{
		Mtype: msg.Mtype.String(), Mterm: int(msg.Mterm),
		MlastLogTerm: int(msg.MlastLogTerm), MlastLogIndex: int(msg.MlastLogIndex),
		MprevLogIndex: int(msg.MprevLogIndex), MprevLogTerm: int(msg.MprevLogTerm),
		Mentries: traceEntries(msg.Mentries), McommitIndex: int(msg.McommitIndex),
		MvoteGranted: msg.MvoteGranted, Msuccess: msg.Msuccess, MmatchIndex: int(msg.MmatchIndex),
		Msource: serverName(msg.Msource), Mdest: serverName(msg.Mdest), Mambiguous: msg.Mambiguous,
	}
	if m.durable() && msg.Mtype == AppendEntriesRequest {
		c := int(msg.MleaderCommit)
		t.MleaderCommit = &c
	}
	if msg.Mtype == RepairResponse {
		// The peer's durable log travels as runs, as a snapshot's prefix.
		t.Mprefix, t.Mentries = trace.Runs(t.Mentries), nil
	}
	if msg.Mtype == InstallSnapshotRequest {
		// The snapshot's prefix travels as runs (trace-format.md).
		c := int(msg.MleaderCommit)
		t.MleaderCommit, t.Mprefix, t.Mentries = &c, trace.Runs(t.Mentries), nil
	}
	return t
}

func serverList(set ServerSet) *[]string {
	out := []string{}
	for _, id := range set.Members() {
		out = append(out, serverName(id))
	}
	return &out
}

// NodeState is the post-state of server i as a version 1 trace logs it:
// every per-server variable except the history variable voterLog, with the
// whole log.
func (m *Machine[T, L, V]) NodeState(s *StateOf[T, L, V], i ServerID) *trace.NodeState {
	n := m.nodeStateWithoutLog(s, i)
	n.Log = traceEntries(s.Log[i])
	return n
}

// nodeStateWithoutLog is NodeState without the log, which the caller
// logs whole or as a change.
func (m *Machine[T, L, V]) nodeStateWithoutLog(s *StateOf[T, L, V], i ServerID) *trace.NodeState {
	n := &trace.NodeState{
		CurrentTerm: int(s.CurrentTerm[i]), State: s.State[i].String(),
		VotedFor:       serverName(s.VotedFor[i]),
		CommitIndex:    int(s.CommitIndex[i]),
		VotesResponded: serverList(s.VotesResponded[i]), VotesGranted: serverList(s.VotesGranted[i]),
		NextIndex: map[string]int{}, MatchIndex: map[string]int{},
	}
	for _, j := range m.servers {
		n.NextIndex[serverName(j)] = int(s.NextIndex[i][j])
		n.MatchIndex[serverName(j)] = int(s.MatchIndex[i][j])
	}
	if m.durable() {
		d, l, t := int(s.DurableLen[i]), int(s.LearnedCommit[i]), int(s.TruncatedAtTerm[i])
		n.DurableLen, n.LearnedCommit, n.TruncatedAtTerm = &d, &l, &t
		n.Verdict = s.Verdict[i].String()
	}
	return n
}

// TraceConfig is line 0's config for this model.
func (m *Machine[T, L, V]) TraceConfig(source string) *trace.Config {
	c := &trace.Config{Profile: m.Profile.String(), Servers: len(m.servers), Values: len(m.values), Source: source}
	c.Bugs = m.Bugs.String() // profile raft: raft.tla's own rules switched off, if any
	if m.durable() {
		c.Crashes, c.Corruptions = m.Crashes, m.Corruptions
		c.Production = m.Production
		c.BadCommits = m.BadCommits
		c.PowerLosses = m.PowerLosses
		c.Repair = m.Repair
		c.MarkedVotes = m.MarkedVotes
	}
	if m.Membership {
		c.Membership, c.InitVoters = true, m.InitVoters
	}
	return c
}

// stepEvent is the trace event of one step, with the node's whole log.
func (m *Model) stepEvent(st Step) trace.Event {
	e := m.event(st.Label, st.State)
	e.State.Log = traceEntries(st.State.Log[st.Label.I])
	return e
}

// event is the trace event of the step l to s, without the node's log.
func (m *Machine[T, L, V]) event(l LabelOf[T, L], s *StateOf[T, L, V]) trace.Event {
	e := trace.Event{Action: l.Action.String(), Node: serverName(l.I), State: m.nodeStateWithoutLog(s, l.I)}
	switch {
	case l.Action == ActRequestVote || l.Action == ActAppendEntries || l.Action == ActRequestRepair:
		e.Peer = serverName(l.J)
	case l.Action == ActSendAppendEntries || l.Action == ActSendSnapshot:
		e.Peer = serverName(l.J)
		e.Msg = m.TraceMessage(l.Msg)
	case l.Action == ActCorruptLeaderCommit:
		e.Peer = serverName(l.Msg.Msource)
		e.Msg = m.TraceMessage(l.Msg)
		c := int(l.Cut)
		e.Cut = &c
	case l.Action.ReceivesMessage():
		e.Peer = serverName(l.Msg.Msource)
		e.Msg = m.TraceMessage(l.Msg)
		e.Branch = l.Branch.String()
		if l.Action == ActSendRepairSnapshot {
			c := int(l.Cut)
			e.Cut = &c
		}
	case l.Action == ActClientRequest:
		v := int(l.Value)
		e.Value = &v
	case l.Action == ActChangeConfig:
		v := int(l.Value)
		e.Value = &v
		e.Peer = serverName(l.J)
	case l.Action == ActCrash || l.Action == ActCorrupt || l.Action == ActFlushTo ||
		l.Action == ActCrashFromSnapshot || l.Action == ActCorruptFromSnapshot || l.Action == ActPowerLoss || l.Action == ActPowerLossFromSnapshot:
		c := int(l.Cut)
		e.Cut = &c
	}
	return e
}

// WriteTrace writes a behaviour (its first step is the initial state) as a
// trace of the current version: each event logs the change of its node's
// log since the node's previous event.
func (m *Model) WriteTrace(w io.Writer, steps []Step) error {
	tw := trace.NewWriter(w)
	if err := tw.Write(trace.Event{Action: "Init", Config: m.TraceConfig("spec")}); err != nil {
		return err
	}
	logs := map[string][]trace.Entry{}
	for _, st := range steps[1:] {
		e := m.stepEvent(st)
		keep, app := trace.Delta(logs[e.Node], e.State.Log)
		logs[e.Node] = e.State.Log
		e.State.Log, e.State.LogKeep, e.State.LogAppend = nil, &keep, app
		if err := tw.Write(e); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// WriteTraceFile writes a behaviour to path.
func (m *Model) WriteTraceFile(path string, steps []Step) error {
	var b bytes.Buffer
	if err := m.WriteTrace(&b, steps); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("spec: write trace: %w", err)
	}
	return nil
}
