package spec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/durableraft/durableraft/trace"
)

// This file converts what a trace logs into the trace checker's values:
// servers by name, numbers to 64 bits, a node's logged post-state with its
// log rebuilt from a version 2 change, and it renders a mismatch.

// server is the id of a server name of the trace's config.
func (c *TraceChecker) server(name string) (ServerID, error) {
	if id, ok := c.ids[name]; ok {
		return id, nil
	}
	return Nil, fmt.Errorf("%q is not a server of the trace's config", name)
}

// count converts a logged term, index, length or budget.
func count(what string, v int) (uint64, error) {
	if v < 0 || v > trace.MaxIndex {
		return 0, fmt.Errorf("%s %d out of range", what, v)
	}
	return uint64(v), nil
}

func entryFromTrace(e trace.Entry) (EntryOf[uint64], error) {
	if e.Term < 1 || e.Term > trace.MaxIndex || e.Value < 0 || e.Value > maxTraceValues {
		return EntryOf[uint64]{}, fmt.Errorf("entry %+v out of the model's range", e)
	}
	return EntryOf[uint64]{Term: uint64(e.Term), Value: uint8(e.Value)}, nil
}

// appendEntries appends logged entries to l.
func appendEntries(l RunLog, entries []trace.Entry) (RunLog, error) {
	for _, e := range entries {
		x, err := entryFromTrace(e)
		if err != nil {
			return l, err
		}
		l = l.Append(x)
	}
	return l, nil
}

// appendRuns appends a version 2 logAppend to l.
func appendRuns(l RunLog, runs []trace.Run) (RunLog, error) {
	for _, r := range runs {
		for _, v := range r.Values {
			x, err := entryFromTrace(trace.Entry{Term: r.Term, Value: v})
			if err != nil {
				return l, err
			}
			l = l.Append(x)
		}
	}
	return l, nil
}

var mtypes = map[string]MType{"RequestVoteRequest": RequestVoteRequest, "RequestVoteResponse": RequestVoteResponse,
	"AppendEntriesRequest": AppendEntriesRequest, "AppendEntriesResponse": AppendEntriesResponse,
	"InstallSnapshotRequest": InstallSnapshotRequest,
	"RepairRequest":          RepairRequest, "RepairResponse": RepairResponse}

// message converts a logged message; Mlog stays empty.
func (c *TraceChecker) message(t *trace.Message) (traceMessage, error) {
	var msg traceMessage
	mtype, ok := mtypes[t.Mtype]
	if !ok {
		return msg, fmt.Errorf("mtype %q", t.Mtype)
	}
	src, err := c.server(t.Msource)
	if err != nil {
		return msg, err
	}
	dst, err := c.server(t.Mdest)
	if err != nil {
		return msg, err
	}
	entries, err := appendEntries(RunLog{}, t.Mentries)
	if err != nil {
		return msg, err
	}
	if mtype == InstallSnapshotRequest || mtype == RepairResponse {
		// The snapshot's prefix (a repair answer's log) travels as runs;
		// the spec's message holds it in mentries.
		if entries, err = appendRuns(RunLog{}, t.Mprefix); err != nil {
			return msg, err
		}
	}
	var f [8]uint64
	leaderCommit := 0
	if t.MleaderCommit != nil {
		leaderCommit = *t.MleaderCommit
	}
	for k, v := range []int{t.Mterm, t.MlastLogTerm, t.MlastLogIndex, t.MprevLogIndex, t.MprevLogTerm, t.McommitIndex, t.MmatchIndex, leaderCommit} {
		if f[k], err = count("message field", v); err != nil {
			return msg, err
		}
	}
	return traceMessage{Mtype: mtype, Mterm: f[0], MlastLogTerm: f[1], MlastLogIndex: f[2], MprevLogIndex: f[3],
		MprevLogTerm: f[4], Mentries: entries, McommitIndex: f[5], MmatchIndex: f[6], MleaderCommit: f[7],
		MvoteGranted: t.MvoteGranted, Msuccess: t.Msuccess, Msource: src, Mdest: dst, Mambiguous: t.Mambiguous}, nil
}

// loggedState is an event's logged post-state of its node in the
// checker's values. A nil pointer is a field the event does not log.
type loggedState struct {
	term, commit   uint64
	role           Role
	votedFor       ServerID
	log            RunLog
	votesResponded *ServerSet
	votesGranted   *ServerSet
	nextIndex      *[MaxServers + 1]uint64
	matchIndex     *[MaxServers + 1]uint64
	durableLen     *uint64
	learnedCommit  *uint64
	verdict        *Verdict
	truncatedAt    *uint64
	raw            *trace.NodeState
}

var roles = map[string]Role{"Follower": Follower, "Candidate": Candidate, "Leader": Leader}

// loggedState converts e.State, rebuilding the node's log: whole in
// version 1, from the node's previous logged log in version 2.
func (c *TraceChecker) loggedState(e *trace.Event) (*loggedState, error) {
	n := e.State
	i, _ := c.server(e.Node)
	w := &loggedState{raw: n}
	var err error
	if w.term, err = count("currentTerm", n.CurrentTerm); err != nil {
		return nil, err
	}
	if w.commit, err = count("commitIndex", n.CommitIndex); err != nil {
		return nil, err
	}
	var ok bool
	if w.role, ok = roles[n.State]; !ok {
		return nil, fmt.Errorf("state %q", n.State)
	}
	if n.VotedFor != "Nil" {
		if w.votedFor, err = c.server(n.VotedFor); err != nil {
			return nil, fmt.Errorf("votedFor: %w", err)
		}
	}
	if n.LogKeep != nil {
		prev := c.logged[i]
		if *n.LogKeep < 0 || *n.LogKeep > prev.Len() {
			return nil, fmt.Errorf("logKeep %d: %s logged %d entries last", *n.LogKeep, e.Node, prev.Len())
		}
		w.log, err = appendRuns(prev.Prefix(*n.LogKeep), n.LogAppend)
	} else {
		w.log, err = appendEntries(RunLog{}, n.Log)
	}
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	if w.votesResponded, err = c.serverSet(n.VotesResponded); err != nil {
		return nil, err
	}
	if w.votesGranted, err = c.serverSet(n.VotesGranted); err != nil {
		return nil, err
	}
	if w.nextIndex, err = c.indexMap(n.NextIndex); err != nil {
		return nil, err
	}
	if w.matchIndex, err = c.indexMap(n.MatchIndex); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		p   *int
		out **uint64
	}{{n.DurableLen, &w.durableLen}, {n.LearnedCommit, &w.learnedCommit}, {n.TruncatedAtTerm, &w.truncatedAt}} {
		if f.p != nil {
			v, err := count("durable field", *f.p)
			if err != nil {
				return nil, err
			}
			*f.out = &v
		}
	}
	switch n.Verdict {
	case "":
	case "CLEAN", "TRUNCATED", "AMBIGUOUS":
		v := Clean
		switch n.Verdict {
		case "TRUNCATED":
			v = Truncated
		case "AMBIGUOUS":
			v = Ambiguous
		}
		w.verdict = &v
	default:
		return nil, fmt.Errorf("verdict %q", n.Verdict)
	}
	return w, nil
}

func (c *TraceChecker) serverSet(names *[]string) (*ServerSet, error) {
	if names == nil {
		return nil, nil
	}
	var set ServerSet
	for _, n := range *names {
		id, err := c.server(n)
		if err != nil {
			return nil, err
		}
		set = set.With(id)
	}
	if set.Len() != len(*names) {
		return nil, fmt.Errorf("server set %v repeats a server", *names)
	}
	return &set, nil
}

// indexMap converts a logged server -> index map. It must have every
// server of the model (the spec's map does).
func (c *TraceChecker) indexMap(m map[string]int) (*[MaxServers + 1]uint64, error) {
	if m == nil {
		return nil, nil
	}
	if len(m) != len(c.m.servers) {
		return nil, fmt.Errorf("index map with %d servers, the model has %d", len(m), len(c.m.servers))
	}
	var out [MaxServers + 1]uint64
	for n, v := range m {
		id, err := c.server(n)
		if err != nil {
			return nil, err
		}
		if out[id], err = count("index", v); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// matches reports whether s's post-state of i agrees with every logged
// field.
func (w *loggedState) matches(m *traceMachine, s *TraceState, i ServerID) bool {
	if w.term != s.CurrentTerm[i] || w.role != s.State[i] || w.votedFor != s.VotedFor[i] || w.commit != s.CommitIndex[i] {
		return false
	}
	if (w.votesResponded != nil && *w.votesResponded != s.VotesResponded[i]) ||
		(w.votesGranted != nil && *w.votesGranted != s.VotesGranted[i]) {
		return false
	}
	for _, j := range m.servers {
		if (w.nextIndex != nil && w.nextIndex[j] != s.NextIndex[i][j]) || (w.matchIndex != nil && w.matchIndex[j] != s.MatchIndex[i][j]) {
			return false
		}
	}
	if (w.durableLen != nil && *w.durableLen != s.DurableLen[i]) || (w.learnedCommit != nil && *w.learnedCommit != s.LearnedCommit[i]) ||
		(w.verdict != nil && *w.verdict != s.Verdict[i]) || (w.truncatedAt != nil && *w.truncatedAt != s.TruncatedAtTerm[i]) {
		return false
	}
	return w.log.Equal(s.Log[i])
}

// diff lists the logged fields that differ from s's post-state of i, in
// the order of docs/trace-format.md.
func (w *loggedState) diff(c *TraceChecker, s *TraceState, i ServerID) []FieldDiff {
	var out []FieldDiff
	add := func(field string, differ bool, logged, spec any) {
		if differ {
			lj, _ := json.Marshal(logged)
			sj, _ := json.Marshal(spec)
			out = append(out, FieldDiff{Field: field, Logged: string(lj), Spec: string(sj)})
		}
	}
	name := func(id ServerID) string { return c.names[id] }
	set := func(x ServerSet) []string {
		out := []string{}
		for _, id := range x.Members() {
			out = append(out, name(id))
		}
		return out
	}
	index := func(a *[MaxServers + 1]uint64) map[string]uint64 {
		out := map[string]uint64{}
		for _, j := range c.m.servers {
			out[name(j)] = a[j]
		}
		return out
	}
	add("currentTerm", w.term != s.CurrentTerm[i], w.term, s.CurrentTerm[i])
	add("state", w.role != s.State[i], w.role.String(), s.State[i].String())
	add("votedFor", w.votedFor != s.VotedFor[i], name(w.votedFor), name(s.VotedFor[i]))
	if k := w.log.firstDifference(s.Log[i]); k > 0 {
		lj, sj := renderLogs(w.log, s.Log[i], k)
		out = append(out, FieldDiff{Field: "log", Logged: lj, Spec: sj})
	}
	add("commitIndex", w.commit != s.CommitIndex[i], w.commit, s.CommitIndex[i])
	if w.votesResponded != nil {
		add("votesResponded", *w.votesResponded != s.VotesResponded[i], set(*w.votesResponded), set(s.VotesResponded[i]))
	}
	if w.votesGranted != nil {
		add("votesGranted", *w.votesGranted != s.VotesGranted[i], set(*w.votesGranted), set(s.VotesGranted[i]))
	}
	specNext, specMatch := s.NextIndex[i], s.MatchIndex[i]
	if w.nextIndex != nil {
		add("nextIndex", *w.nextIndex != specNext, index(w.nextIndex), index(&specNext))
	}
	if w.matchIndex != nil {
		add("matchIndex", *w.matchIndex != specMatch, index(w.matchIndex), index(&specMatch))
	}
	if w.durableLen != nil {
		add("durableLen", *w.durableLen != s.DurableLen[i], *w.durableLen, s.DurableLen[i])
	}
	if w.learnedCommit != nil {
		add("learnedCommit", *w.learnedCommit != s.LearnedCommit[i], *w.learnedCommit, s.LearnedCommit[i])
	}
	if w.verdict != nil {
		add("verdict", *w.verdict != s.Verdict[i], w.verdict.String(), s.Verdict[i].String())
	}
	if w.truncatedAt != nil {
		add("truncatedAtTerm", *w.truncatedAt != s.TruncatedAtTerm[i], *w.truncatedAt, s.TruncatedAtTerm[i])
	}
	return out
}

// shortLog is the length up to which a mismatching log is shown whole.
const shortLog = 16

// renderLogs renders two logs that first differ at index k: whole when
// both are short, else as their lengths and the entries from k on (at most
// three).
func renderLogs(logged, spec RunLog, k int) (string, string) {
	if logged.Len() <= shortLog && spec.Len() <= shortLog {
		return entriesJSON(logged, 1, logged.Len()), entriesJSON(spec, 1, spec.Len())
	}
	tail := func(l RunLog) string {
		var b strings.Builder
		b.WriteString(strconv.Itoa(l.Len()) + " entries")
		if k <= l.Len() {
			fmt.Fprintf(&b, ", [%d..]=%s", k, entriesJSON(l, k, min(l.Len(), k+2)))
		} else {
			fmt.Fprintf(&b, ", none from %d", k)
		}
		return b.String()
	}
	return tail(logged), tail(spec)
}

func entriesJSON(l RunLog, lo, hi int) string {
	parts := []string{}
	for x := lo; x <= hi; x++ {
		e := l.At(x)
		parts = append(parts, fmt.Sprintf(`{"term":%d,"value":%d}`, e.Term, e.Value))
	}
	return "[" + strings.Join(slices.Clip(parts), ",") + "]"
}
