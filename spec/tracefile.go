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

func parseServer(name string, n int) (ServerID, error) {
	if !trace.ValidServer(name) {
		return 0, fmt.Errorf("bad server %q", name)
	}
	id, _ := strconv.Atoi(name[1:])
	if id > n {
		return 0, fmt.Errorf("server %q beyond the %d servers of the model", name, n)
	}
	return ServerID(id), nil
}

func traceEntries(l Log) []trace.Entry {
	out := make([]trace.Entry, l.Len())
	for k := range out {
		e := l.At(k + 1)
		out[k] = trace.Entry{Term: int(e.Term), Value: int(e.Value)}
	}
	return out
}

func logFromTrace(entries []trace.Entry) (Log, error) {
	b := make([]byte, 0, 2*len(entries))
	for _, e := range entries {
		if e.Term < 1 || e.Term > 255 || e.Value < 0 || e.Value > 255 {
			return "", fmt.Errorf("entry %+v out of the model's range", e)
		}
		b = append(b, uint8(e.Term), uint8(e.Value))
	}
	return Log(b), nil
}

// TraceMessage converts a message, leaving out the history field mlog.
func (m *Model) TraceMessage(msg Message) *trace.Message {
	t := &trace.Message{
		Mtype: msg.Mtype.String(), Mterm: int(msg.Mterm),
		MlastLogTerm: int(msg.MlastLogTerm), MlastLogIndex: int(msg.MlastLogIndex),
		MprevLogIndex: int(msg.MprevLogIndex), MprevLogTerm: int(msg.MprevLogTerm),
		Mentries: traceEntries(msg.Mentries), McommitIndex: int(msg.McommitIndex),
		MvoteGranted: msg.MvoteGranted, Msuccess: msg.Msuccess, MmatchIndex: int(msg.MmatchIndex),
		Msource: serverName(msg.Msource), Mdest: serverName(msg.Mdest),
	}
	if m.durable() && msg.Mtype == AppendEntriesRequest {
		c := int(msg.MleaderCommit)
		t.MleaderCommit = &c
	}
	return t
}

// messageFromTrace converts a trace message; Mlog stays empty and is
// matched against the bag by the checker.
func (m *Model) messageFromTrace(t *trace.Message) (Message, error) {
	var msg Message
	types := map[string]MType{"RequestVoteRequest": RequestVoteRequest, "RequestVoteResponse": RequestVoteResponse,
		"AppendEntriesRequest": AppendEntriesRequest, "AppendEntriesResponse": AppendEntriesResponse}
	mtype, ok := types[t.Mtype]
	if !ok {
		return msg, fmt.Errorf("mtype %q", t.Mtype)
	}
	src, err := parseServer(t.Msource, len(m.servers))
	if err != nil {
		return msg, err
	}
	dst, err := parseServer(t.Mdest, len(m.servers))
	if err != nil {
		return msg, err
	}
	entries, err := logFromTrace(t.Mentries)
	if err != nil {
		return msg, err
	}
	for _, v := range []int{t.Mterm, t.MlastLogTerm, t.MlastLogIndex, t.MprevLogIndex, t.MprevLogTerm, t.McommitIndex, t.MmatchIndex} {
		if v > 255 {
			return msg, fmt.Errorf("message field %d beyond the model's range", v)
		}
	}
	msg = Message{Mtype: mtype, Mterm: uint8(t.Mterm), MlastLogTerm: uint8(t.MlastLogTerm),
		MlastLogIndex: uint8(t.MlastLogIndex), MprevLogIndex: uint8(t.MprevLogIndex),
		MprevLogTerm: uint8(t.MprevLogTerm), Mentries: entries, McommitIndex: uint8(t.McommitIndex),
		MvoteGranted: t.MvoteGranted, Msuccess: t.Msuccess, MmatchIndex: uint8(t.MmatchIndex),
		Msource: src, Mdest: dst}
	if t.MleaderCommit != nil {
		if *t.MleaderCommit > 255 {
			return msg, fmt.Errorf("mleaderCommit %d beyond the model's range", *t.MleaderCommit)
		}
		msg.MleaderCommit = uint8(*t.MleaderCommit)
	}
	return msg, nil
}

func serverList(set ServerSet) *[]string {
	out := []string{}
	for _, id := range set.Members() {
		out = append(out, serverName(id))
	}
	return &out
}

// NodeState is the post-state of server i as the trace logs it: every
// per-server variable except the history variable voterLog.
func (m *Model) NodeState(s *State, i ServerID) *trace.NodeState {
	n := &trace.NodeState{
		CurrentTerm: int(s.CurrentTerm[i]), State: s.State[i].String(),
		VotedFor: serverName(s.VotedFor[i]), Log: traceEntries(s.Log[i]),
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
func (m *Model) TraceConfig(source string) *trace.Config {
	c := &trace.Config{Profile: m.Profile.String(), Servers: len(m.servers), Values: len(m.values), Source: source}
	if m.durable() {
		c.Crashes, c.Corruptions, c.Bugs = m.Crashes, m.Corruptions, m.Bugs.String()
		c.Production = m.Production
	}
	return c
}

// StepEvent is the trace event of one step.
func (m *Model) StepEvent(st Step) trace.Event {
	l := st.Label
	e := trace.Event{Action: l.Action.String(), Node: serverName(l.I), State: m.NodeState(st.State, l.I)}
	switch {
	case l.Action == ActRequestVote || l.Action == ActAppendEntries:
		e.Peer = serverName(l.J)
	case l.Action == ActSendAppendEntries:
		e.Peer = serverName(l.J)
		e.Msg = m.TraceMessage(l.Msg)
	case l.Action.ReceivesMessage():
		e.Peer = serverName(l.Msg.Msource)
		e.Msg = m.TraceMessage(l.Msg)
		e.Branch = l.Branch.String()
	case l.Action == ActClientRequest:
		v := int(l.Value)
		e.Value = &v
	case l.Action == ActCrash || l.Action == ActCorrupt || l.Action == ActFlushTo:
		c := int(l.Cut)
		e.Cut = &c
	}
	return e
}

// WriteTrace writes a behaviour (its first step is the initial state) as a
// trace.
func (m *Model) WriteTrace(w io.Writer, steps []Step) error {
	tw := trace.NewWriter(w)
	if err := tw.Write(trace.Event{Action: "Init", Config: m.TraceConfig("spec")}); err != nil {
		return err
	}
	for _, st := range steps[1:] {
		if err := tw.Write(m.StepEvent(st)); err != nil {
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
