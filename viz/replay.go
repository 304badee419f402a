package viz

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

// The invariants of spec/ are state predicates of the explorer's model,
// which keeps the history variables they read (elections, committed, ...).
// A trace logs none of those, so the page learns what the invariants say
// by replaying the trace through that model: from Init, each event is the
// successor of Next whose step and logged fields agree with it, as in the
// trace checker, and every invariant is evaluated on every state reached.
// The model's numbers are 8-bit and its servers at most five: a trace that
// leaves those (a long impl/ run) is replayed up to the first event that
// does not fit.

// InvReport is what the invariants say along the run.
type InvReport struct {
	Names []string `json:"names"` // the invariants evaluated, in order
	// Upto is how many events were replayed; Stop says why not all.
	Upto int    `json:"upto"`
	Stop string `json:"stop,omitempty"`
	// First is each violated invariant's first violation.
	First []InvViolation `json:"first,omitempty"`
	// Marks lists, for each event after which some invariant is violated,
	// [event, bit mask over Names].
	Marks [][2]int `json:"marks,omitempty"`
}

// InvViolation is an invariant broken after an event (-1: in Init).
type InvViolation struct {
	Invariant string `json:"invariant"`
	Event     int    `json:"event"`
	Detail    string `json:"detail"`
}

// replayMaxEvents bounds the replay: the model's history variables grow
// with the run.
const (
	replayMaxEvents   = 5000
	replayMaxFrontier = 256
)

type replayer struct {
	m        *spec.Model
	invs     []spec.Invariant
	rename   map[string]string // trace name → s1..sN, the model's names
	ids      map[string]spec.ServerID
	frontier []*spec.State
	upto     int
	stop     string
	first    map[string]bool
	rep      InvReport
}

func newReplayer(c *trace.Config) *replayer {
	r := &replayer{rename: map[string]string{"Nil": "Nil", "": ""}, ids: map[string]spec.ServerID{}, first: map[string]bool{}}
	bugs, err := spec.ParseBugs(c.Bugs)
	if err == nil {
		p, perr := spec.ParseProfile(c.Profile)
		err = perr
		if err == nil {
			r.m, err = spec.NewModel(spec.Config{Profile: p, Servers: c.Servers, Values: min(c.Values, 200),
				MaxTerm: 200, MaxLog: 100, MaxDup: 200, MaxMsgs: 1 << 20,
				Crashes: min(c.Crashes, 200), Corruptions: min(c.Corruptions, 200), Bugs: bugs, Production: c.Production, PowerLosses: min(c.PowerLosses, 200),
				Membership: c.Membership, InitVoters: c.InitVoters, MarkedVotes: c.MarkedVotes})
		}
	}
	if err != nil {
		r.stop = "the explorer's model cannot hold this trace: " + err.Error()
		return r
	}
	for k, n := range c.ServerNames() {
		r.rename[n] = "s" + strconv.Itoa(k+1)
		r.ids[n] = spec.ServerID(k + 1)
	}
	r.invs, _ = r.m.InvariantsFor("")
	for _, inv := range r.invs {
		r.rep.Names = append(r.rep.Names, inv.Name)
	}
	init := r.m.Init()
	r.frontier = []*spec.State{init}
	r.evaluate(-1)
	return r
}

// step replays one event; log is the node's whole log after it. Only
// the action instance the event names is taken (Model.Step), from every
// state the trace can be in so far.
func (r *replayer) step(e *trace.Event, log []trace.Entry, idx int) {
	if r.stop != "" {
		return
	}
	if idx >= replayMaxEvents {
		r.stop = fmt.Sprintf("the invariants are evaluated on the first %d events only", replayMaxEvents)
		return
	}
	l, msg, err := r.label(e)
	if err != nil {
		r.stop = fmt.Sprintf("event %d (%s): %v", idx+1, e.Action, err)
		return
	}
	seen := map[string]bool{}
	var next []*spec.State
	var buf []byte
	accept := func(n spec.State, _ spec.Label) {
		if !r.stateMatches(&n, l.I, e, log) {
			return
		}
		buf = r.m.Encode(buf[:0], &n)
		if seen[string(buf)] {
			return
		}
		seen[string(buf)] = true
		kept := n
		next = append(next, &kept)
	}
	for _, s := range r.frontier {
		if msg == nil {
			r.m.Step(s, l, accept)
			continue
		}
		// The trace has no mlog: every message of the bag equal to the
		// logged one but for mlog is a candidate.
		for _, b := range s.Messages {
			cand := *msg
			cand.Mlog = b.M.Mlog
			if cand == b.M {
				l.Msg = b.M
				r.m.Step(s, l, accept)
			}
		}
	}
	switch {
	case len(next) == 0:
		r.stop = fmt.Sprintf("event %d (%s) is no step of the explorer's model from here (not a behaviour of the spec, or numbers beyond the model's 8 bits)", idx+1, e.Action)
		return
	case len(next) > replayMaxFrontier:
		r.stop = fmt.Sprintf("event %d is consistent with more than %d states of the model", idx+1, replayMaxFrontier)
		return
	}
	for _, n := range next {
		for _, i := range r.m.Servers() {
			if n.Log[i].Len() > 255 {
				r.stop = fmt.Sprintf("event %d makes a log of %d entries, beyond the explorer's 8-bit numbers", idx+1, n.Log[i].Len())
				return
			}
		}
	}
	r.frontier = next
	r.upto = idx + 1
	r.evaluate(idx)
}

// label is the step an event names, in the model's terms; msg is the
// message a message action handles (without mlog).
func (r *replayer) label(e *trace.Event) (spec.Label, *spec.Message, error) {
	var l spec.Label
	a, ok := spec.ParseAction(e.Action)
	if !ok {
		return l, nil, fmt.Errorf("unknown action")
	}
	l.Action = a
	var err error
	if l.I, err = r.server(e.Node); err != nil {
		return l, nil, err
	}
	if e.Peer != "" {
		if l.J, err = r.server(e.Peer); err != nil {
			return l, nil, err
		}
	}
	if b, ok := spec.ParseBranch(e.Branch); ok {
		l.Branch = b
	}
	if e.Value != nil {
		if l.Value, err = small(*e.Value); err != nil {
			return l, nil, err
		}
	}
	if e.Cut != nil {
		if l.Cut, err = small(*e.Cut); err != nil {
			return l, nil, err
		}
	}
	if e.Msg == nil {
		return l, nil, nil
	}
	msg, err := r.message(e.Msg)
	if err != nil {
		return l, nil, err
	}
	if a == spec.ActSendAppendEntries || a == spec.ActSendSnapshot {
		l.Msg = msg
		return l, nil, nil
	}
	return l, &msg, nil
}

func small(v int) (uint8, error) {
	if v < 0 || v > 255 {
		return 0, fmt.Errorf("%d is beyond the explorer's 8-bit numbers", v)
	}
	return uint8(v), nil
}

func (r *replayer) server(name string) (spec.ServerID, error) {
	if name == "" {
		return spec.Nil, nil
	}
	id, ok := r.ids[name]
	if !ok {
		return 0, fmt.Errorf("unknown server %q", name)
	}
	return id, nil
}

// message converts a trace message to the model's (mlog empty).
func (r *replayer) message(t *trace.Message) (spec.Message, error) {
	var m spec.Message
	types := map[string]spec.MType{"RequestVoteRequest": spec.RequestVoteRequest, "RequestVoteResponse": spec.RequestVoteResponse,
		"AppendEntriesRequest": spec.AppendEntriesRequest, "AppendEntriesResponse": spec.AppendEntriesResponse,
		"InstallSnapshotRequest": spec.InstallSnapshotRequest}
	m.Mtype = types[t.Mtype]
	var err error
	for _, f := range []struct {
		dst *uint8
		v   int
	}{{&m.Mterm, t.Mterm}, {&m.MlastLogTerm, t.MlastLogTerm}, {&m.MlastLogIndex, t.MlastLogIndex},
		{&m.MprevLogIndex, t.MprevLogIndex}, {&m.MprevLogTerm, t.MprevLogTerm}, {&m.McommitIndex, t.McommitIndex},
		{&m.MmatchIndex, t.MmatchIndex}} {
		if *f.dst, err = small(f.v); err != nil {
			return m, err
		}
	}
	if t.MleaderCommit != nil {
		if m.MleaderCommit, err = small(*t.MleaderCommit); err != nil {
			return m, err
		}
	}
	var entries []spec.Entry
	// A snapshot's prefix travels as runs; the spec holds it in mentries.
	for _, e := range trace.AppendRuns(append([]trace.Entry(nil), t.Mentries...), t.Mprefix) {
		term, err1 := small(e.Term)
		value, err2 := small(e.Value)
		if err1 != nil || err2 != nil {
			return m, fmt.Errorf("an entry beyond the explorer's 8-bit numbers")
		}
		entries = append(entries, spec.Entry{Term: term, Value: value})
	}
	m.Mentries = spec.LogOf(entries...)
	m.MvoteGranted, m.Msuccess, m.Mambiguous = t.MvoteGranted, t.Msuccess, t.Mambiguous
	if m.Msource, err = r.server(t.Msource); err != nil {
		return m, err
	}
	m.Mdest, err = r.server(t.Mdest)
	return m, err
}

// evaluate checks every invariant on the states the trace can be in; one
// is violated when it is in all of them.
func (r *replayer) evaluate(idx int) {
	mask := 0
	for k, inv := range r.invs {
		detail := ""
		for _, s := range r.frontier {
			d := inv.Check(r.m, s)
			if d == "" {
				detail = ""
				break
			}
			if detail == "" {
				detail = d
			}
		}
		if detail == "" {
			continue
		}
		mask |= 1 << k
		if !r.first[inv.Name] {
			r.first[inv.Name] = true
			r.rep.First = append(r.rep.First, InvViolation{Invariant: inv.Name, Event: idx, Detail: detail})
		}
	}
	if mask != 0 {
		r.rep.Marks = append(r.rep.Marks, [2]int{idx, mask})
	}
}

func (r *replayer) report() *InvReport {
	if r.m == nil {
		return &InvReport{Stop: r.stop}
	}
	rep := r.rep
	rep.Upto, rep.Stop = r.upto, r.stop
	return &rep
}

// stateMatches compares the fields the event logs with the successor's
// post-state of node i.
func (r *replayer) stateMatches(n *spec.State, i spec.ServerID, e *trace.Event, log []trace.Entry) bool {
	w := e.State
	if w == nil {
		return true
	}
	g := r.m.NodeState(n, i)
	if g.CurrentTerm != w.CurrentTerm || g.State != w.State || g.VotedFor != r.rename[w.VotedFor] ||
		g.CommitIndex != w.CommitIndex || !slices.Equal(g.Log, log) {
		return false
	}
	eqp := func(a, b *int) bool { return b == nil || (a != nil && *a == *b) }
	if !eqp(g.DurableLen, w.DurableLen) || !eqp(g.LearnedCommit, w.LearnedCommit) || !eqp(g.TruncatedAtTerm, w.TruncatedAtTerm) {
		return false
	}
	if w.Verdict != "" && g.Verdict != w.Verdict {
		return false
	}
	for _, p := range [][2]*[]string{{g.VotesResponded, w.VotesResponded}, {g.VotesGranted, w.VotesGranted}} {
		if p[1] == nil {
			continue
		}
		var want []string
		for _, n := range *p[1] {
			want = append(want, r.rename[n])
		}
		slices.Sort(want)
		if p[0] == nil || !slices.Equal(*p[0], want) {
			return false
		}
	}
	for _, p := range [][2]map[string]int{{g.NextIndex, w.NextIndex}, {g.MatchIndex, w.MatchIndex}} {
		for name, v := range p[1] {
			if p[0][r.rename[name]] != v {
				return false
			}
		}
	}
	return true
}
