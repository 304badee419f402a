package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/durableraft/durableraft/trace"
)

// maxFrontier bounds the set of spec states a trace prefix may correspond
// to (it grows only where the trace leaves out a choice the spec makes).
const maxFrontier = 1 << 14

// maxCandidates is how many rejected successors a mismatch keeps to show.
const maxCandidates = 3

// TraceMismatch is the first event of a trace that no enabled spec action
// explains.
type TraceMismatch struct {
	Seq    int
	Event  trace.Event
	Reason string
	// Candidates has, for each spec successor the action has (at most
	// three are kept), the fields the event logs that differ from the
	// successor's post-state of the node. Rejected counts them all.
	Candidates [][]FieldDiff
	Rejected   int
}

// FieldDiff is one field of a node's post-state on which the trace and a
// spec successor disagree, each side rendered as JSON (a long log as its
// length and first differing entry).
type FieldDiff struct {
	Field, Logged, Spec string
}

func (e *TraceMismatch) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "event %d (%s on %s", e.Seq, e.Event.Action, e.Event.Node)
	if e.Event.Msg != nil {
		msg, _ := json.Marshal(e.Event.Msg)
		fmt.Fprintf(&b, ", msg %s", msg)
	}
	fmt.Fprintf(&b, ") is not a step of the spec: %s", e.Reason)
	for k, diffs := range e.Candidates {
		fmt.Fprintf(&b, "\n  candidate %d: %-16s %-28s %s", k+1, "field", "logged", "spec")
		for _, d := range diffs {
			fmt.Fprintf(&b, "\n               %-16s %-28s %s", d.Field, d.Logged, d.Spec)
		}
	}
	if more := e.Rejected - len(e.Candidates); more > 0 {
		fmt.Fprintf(&b, "\n  ... %d more candidate successors", more)
	}
	return b.String()
}

// TraceChecker replays a trace event by event against the spec: from
// Init, each event must be a step of the action it names, with its
// parameters and choices, whose post-state of the node agrees with every
// field the event logs. Where the trace leaves out a choice (which message
// of several equal ones), every spec state consistent with the prefix is
// kept, up to equality of the protocol variables. It holds the states and
// each node's logged log, not the events: memory does not grow with the
// trace's length.
type TraceChecker struct {
	m        *traceMachine
	names    []string // names[id]; names[Nil] = "Nil"
	ids      map[string]ServerID
	frontier []*TraceState
	// logged is each node's log as the trace logged it last (a version 2
	// log change applies to it).
	logged [MaxServers + 1]RunLog
	seq    int
	err    error
}

// NewTraceChecker starts checking a trace whose line 0 is init.
func NewTraceChecker(init *trace.Event) (*TraceChecker, error) {
	if init.Action != "Init" || init.Config == nil {
		return nil, errors.New("spec: trace does not start with Init")
	}
	m, err := newTraceMachine(init.Config)
	if err != nil {
		return nil, fmt.Errorf("spec: trace config: %w", err)
	}
	names := init.Config.ServerNames()
	if len(names) != init.Config.Servers {
		return nil, fmt.Errorf("spec: trace config: %d names for %d servers", len(names), init.Config.Servers)
	}
	c := &TraceChecker{m: m, names: append([]string{"Nil"}, names...), ids: map[string]ServerID{},
		frontier: []*TraceState{m.Init()}, seq: 1}
	for k, n := range names {
		if _, dup := c.ids[n]; dup || n == "Nil" {
			return nil, fmt.Errorf("spec: trace config: server name %q", n)
		}
		c.ids[n] = ServerID(k + 1)
	}
	return c, nil
}

// Events is how many events were accepted, Init included.
func (c *TraceChecker) Events() int { return c.seq }

// Frontier is how many spec states the trace so far can be in.
func (c *TraceChecker) Frontier() int { return len(c.frontier) }

// Step checks the next event. After an error the checker is done: Step
// returns that error again.
func (c *TraceChecker) Step(e *trace.Event) error {
	if c.err != nil {
		return c.err
	}
	if err := c.step(e); err != nil {
		c.err = err
		return err
	}
	c.seq++
	return nil
}

func (c *TraceChecker) step(e *trace.Event) error {
	if e.Seq != c.seq {
		return fmt.Errorf("spec: trace event %d comes where event %d belongs", e.Seq, c.seq)
	}
	mismatch := func(reason string) error { return &TraceMismatch{Seq: e.Seq, Event: *e, Reason: reason} }
	l, msg, err := c.label(e)
	if err != nil {
		return mismatch(err.Error())
	}
	var want *loggedState
	if e.State != nil {
		if want, err = c.loggedState(e); err != nil {
			return mismatch(err.Error())
		}
	}
	next := stateSet{m: c.m}
	var (
		candidates [][]FieldDiff
		rejected   int
		inBag      bool
	)
	accept := func(succ TraceState, _ traceLabel) {
		if want != nil && !want.matches(c.m, &succ, l.I) {
			if rejected++; len(candidates) < maxCandidates {
				candidates = append(candidates, want.diff(c, &succ, l.I))
			}
			return
		}
		next.add(&succ)
	}
	for _, s := range c.frontier {
		if msg == nil {
			c.m.Step(s, l, accept)
			continue
		}
		if repairTipOnly(e.Msg) {
			// An impl's repair answer logs only the answer's tip
			// (tracerepair.go): every answer in the bag with that tip.
			for _, k := range repairAnswers(s.Messages, msg) {
				inBag = true
				l.Msg = s.Messages[k].M
				c.m.Step(s, l, accept)
			}
			continue
		}
		// The trace has no mlog, and the trace checker keeps none: the
		// logged message is the bag's, field for field.
		if k, ok := bagIndex(s.Messages, msg); ok {
			inBag = true
			l.Msg = s.Messages[k].M
			c.m.Step(s, l, accept)
		}
	}
	if len(next.states) == 0 {
		reason := "the action is not enabled in any spec state the trace can be in"
		if msg != nil && !inBag {
			reason = "no such message is in the bag"
		}
		if rejected > 0 {
			reason = "the logged post-state differs from every spec successor"
		}
		return &TraceMismatch{Seq: e.Seq, Event: *e, Reason: reason, Candidates: candidates, Rejected: rejected}
	}
	if len(next.states) > maxFrontier {
		return fmt.Errorf("spec: trace event %d is consistent with %d spec states; too ambiguous to check", e.Seq, len(next.states))
	}
	c.frontier = next.states
	if want != nil {
		// Equal to want.log; the spec's own value shares its buffer, so
		// the next comparison is O(1).
		c.logged[l.I] = c.frontier[0].Log[l.I]
	}
	return nil
}

// stateSet collects the successors of one event, one per protocol state:
// a state equal to one already there has the same futures.
type stateSet struct {
	m       *traceMachine
	states  []*TraceState
	keys    []uint64
	buckets map[uint64][]*TraceState // from 16 states on
}

func (set *stateSet) add(n *TraceState) {
	key := set.m.traceKey(n)
	if set.buckets == nil && len(set.states) >= 16 {
		set.buckets = map[uint64][]*TraceState{}
		for k, s := range set.states {
			set.buckets[set.keys[k]] = append(set.buckets[set.keys[k]], s)
		}
	}
	if set.buckets != nil {
		for _, s := range set.buckets[key] {
			if set.m.traceStatesEqual(s, n) {
				return
			}
		}
		set.buckets[key] = append(set.buckets[key], n)
	} else {
		for k, s := range set.states {
			if set.keys[k] == key && set.m.traceStatesEqual(s, n) {
				return
			}
		}
	}
	set.states, set.keys = append(set.states, n), append(set.keys, key)
}

// CheckTrace replays a whole trace (see [TraceChecker]). It returns a
// *TraceMismatch for the first event no spec step explains.
func CheckTrace(events []trace.Event) error {
	if len(events) == 0 {
		return errors.New("spec: trace does not start with Init")
	}
	c, err := NewTraceChecker(&events[0])
	if err != nil {
		return err
	}
	for k := 1; k < len(events); k++ {
		if err := c.Step(&events[k]); err != nil {
			return err
		}
	}
	return nil
}

// CheckTraceReader decodes and checks a trace as it reads it, and returns
// the number of events read.
func CheckTraceReader(r io.Reader) (int, error) {
	return CheckTraceEvents(trace.NewReader(r, trace.ReadOptions{}))
}

// CheckTraceEvents checks the trace rd reads (with the reader's options,
// for example to drop a torn last line), as it reads it, and returns the
// number of events read.
func CheckTraceEvents(rd *trace.Reader) (int, error) {
	init, err := rd.Next()
	if err != nil {
		return 0, err
	}
	c, err := NewTraceChecker(&init)
	if err != nil {
		return 1, err
	}
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return c.Events(), nil
		}
		if err != nil {
			return c.Events(), err
		}
		if err := c.Step(&e); err != nil {
			return c.Events(), err
		}
	}
}

// label builds the step label an event names; msg is the message for
// message actions (its Mlog is empty).
func (c *TraceChecker) label(e *trace.Event) (traceLabel, *traceMessage, error) {
	var l traceLabel
	a, ok := ParseAction(e.Action)
	if !ok {
		return l, nil, fmt.Errorf("unknown action %q", e.Action)
	}
	l.Action = a
	var err error
	if l.I, err = c.server(e.Node); err != nil {
		return l, nil, err
	}
	if e.Peer != "" {
		if l.J, err = c.server(e.Peer); err != nil {
			return l, nil, err
		}
	}
	if b, ok := ParseBranch(e.Branch); ok {
		l.Branch = b
	} else {
		return l, nil, fmt.Errorf("unknown branch %q", e.Branch)
	}
	switch a {
	case ActClientRequest:
		if e.Value == nil || *e.Value < 1 || *e.Value > len(c.m.values) {
			return l, nil, fmt.Errorf("ClientRequest needs a value in 1..%d", len(c.m.values))
		}
		l.Value = uint8(*e.Value)
	case ActChangeConfig:
		if e.Value == nil || *e.Value < ConfigValueBase || *e.Value > 255 || e.Peer == "" {
			return l, nil, fmt.Errorf("ChangeConfig needs a peer and a configuration value in %d..255", ConfigValueBase)
		}
		l.Value = uint8(*e.Value)
	case ActCrash, ActCorrupt, ActCrashFromSnapshot, ActCorruptFromSnapshot, ActCorruptLeaderCommit, ActPowerLoss, ActPowerLossFromSnapshot:
		if e.Cut == nil {
			return l, nil, fmt.Errorf("%s needs a cut point", e.Action)
		}
		if l.Cut, err = count("cut", *e.Cut); err != nil {
			return l, nil, err
		}
	case ActSendRepairSnapshot: // the snapshot's index
		if e.Cut == nil {
			return l, nil, fmt.Errorf("%s needs the snapshot's index (cut)", e.Action)
		}
		if l.Cut, err = count("cut", *e.Cut); err != nil || l.Cut == 0 {
			return l, nil, fmt.Errorf("%s's cut %d out of range", e.Action, *e.Cut)
		}
	case ActFlushTo: // the new durable length; optional
		if e.Cut != nil {
			if l.Cut, err = count("cut", *e.Cut); err != nil || l.Cut == 0 {
				return l, nil, fmt.Errorf("FlushTo's cut %d out of range", *e.Cut)
			}
		}
	case ActRequestVote, ActAppendEntries, ActSendAppendEntries, ActSendSnapshot:
		if e.Peer == "" {
			return l, nil, fmt.Errorf("%s needs a peer", e.Action)
		}
	}
	if a == ActSendAppendEntries || a == ActSendSnapshot {
		// The message sent, without mlog, fixes the range.
		if e.Msg == nil {
			return l, nil, fmt.Errorf("%s needs the message it sends", e.Action)
		}
		msg, err := c.message(e.Msg)
		if err != nil {
			return l, nil, err
		}
		if msg.Msource != l.I || msg.Mdest != l.J {
			return l, nil, fmt.Errorf("%s: message from %s to %s, event from %s to %s", e.Action, e.Msg.Msource, e.Msg.Mdest, e.Node, e.Peer)
		}
		l.Msg = msg
		return l, nil, nil
	}
	if !a.ReceivesMessage() && a != ActCorruptLeaderCommit {
		return l, nil, nil
	}
	if e.Msg == nil {
		return l, nil, fmt.Errorf("%s needs a message", e.Action)
	}
	msg, err := c.message(e.Msg)
	if err != nil {
		return l, nil, err
	}
	if msg.Mdest != l.I {
		return l, nil, fmt.Errorf("node %s is not the message's destination %s", e.Node, e.Msg.Mdest)
	}
	return l, &msg, nil
}
