package viz

import (
	"bytes"
	"encoding/json"
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
	frontier []*spec.State
	upto     int
	stop     string
	first    map[string]bool
	rep      InvReport
}

func newReplayer(c *trace.Config) *replayer {
	r := &replayer{rename: map[string]string{"Nil": "Nil", "": ""}, first: map[string]bool{}}
	bugs, err := spec.ParseBugs(c.Bugs)
	if err == nil {
		p, perr := spec.ParseProfile(c.Profile)
		err = perr
		if err == nil {
			r.m, err = spec.NewModel(spec.Config{Profile: p, Servers: c.Servers, Values: min(c.Values, 200),
				MaxTerm: 200, MaxLog: 100, MaxDup: 200, MaxMsgs: 1 << 20,
				Crashes: min(c.Crashes, 200), Corruptions: min(c.Corruptions, 200), Bugs: bugs, Production: c.Production})
		}
	}
	if err != nil {
		r.stop = "the explorer's model cannot hold this trace: " + err.Error()
		return r
	}
	for k, n := range c.ServerNames() {
		r.rename[n] = "s" + strconv.Itoa(k+1)
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

// step replays one event; log is the node's whole log after it.
func (r *replayer) step(e *trace.Event, log []trace.Entry, idx int) {
	if r.stop != "" {
		return
	}
	if idx >= replayMaxEvents {
		r.stop = fmt.Sprintf("the invariants are evaluated on the first %d events only", replayMaxEvents)
		return
	}
	msg := r.renamedMsg(e.Msg)
	seen := map[string]bool{}
	var next []*spec.State
	var buf []byte
	for _, s := range r.frontier {
		r.m.Next(s, func(n spec.State, l spec.Label) {
			if !r.labelMatches(l, e, msg) || !r.stateMatches(&n, l.I, e, log) {
				return
			}
			buf = r.m.Encode(buf[:0], &n)
			if seen[string(buf)] {
				return
			}
			seen[string(buf)] = true
			kept := n
			next = append(next, &kept)
		})
	}
	switch {
	case len(next) == 0:
		r.stop = fmt.Sprintf("event %d (%s) is no step of the explorer's model from here (numbers beyond its 8 bits, or not a behaviour of the spec)", idx+1, e.Action)
		return
	case len(next) > replayMaxFrontier:
		r.stop = fmt.Sprintf("event %d is consistent with more than %d states of the model", idx+1, replayMaxFrontier)
		return
	}
	r.frontier = next
	r.upto = idx + 1
	r.evaluate(idx)
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

func (r *replayer) renamedMsg(m *trace.Message) []byte {
	if m == nil {
		return nil
	}
	c := *m
	c.Msource, c.Mdest = r.rename[c.Msource], r.rename[c.Mdest]
	b, _ := json.Marshal(c)
	return b
}

func (r *replayer) labelMatches(l spec.Label, e *trace.Event, msg []byte) bool {
	if l.Action.String() != e.Action || l.I.String() != r.rename[e.Node] {
		return false
	}
	switch l.Action {
	case spec.ActRequestVote, spec.ActAppendEntries:
		return l.J.String() == r.rename[e.Peer]
	case spec.ActClientRequest:
		return e.Value != nil && int(l.Value) == *e.Value
	case spec.ActCrash, spec.ActCorrupt, spec.ActFlushTo:
		return e.Cut == nil || int(l.Cut) == *e.Cut
	}
	if l.Action.ReceivesMessage() || l.Action == spec.ActSendAppendEntries {
		if l.Branch.String() != e.Branch {
			return false
		}
		got, _ := json.Marshal(r.m.TraceMessage(l.Msg))
		return bytes.Equal(got, msg)
	}
	return true
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
