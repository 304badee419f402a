package spec

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"github.com/durableraft/durableraft/trace"
)

// maxFrontier bounds the set of spec states a trace prefix may correspond
// to (it grows only where the trace leaves out history fields such as mlog).
const maxFrontier = 1 << 14

// TraceMismatch is the first event of a trace that no enabled spec action
// explains.
type TraceMismatch struct {
	Seq      int
	Event    trace.Event
	Reason   string
	Logged   *trace.NodeState
	Expected []*trace.NodeState // the node's post-state in each spec successor the action has
}

func (e *TraceMismatch) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "event %d (%s on %s", e.Seq, e.Event.Action, e.Event.Node)
	if e.Event.Msg != nil {
		msg, _ := json.Marshal(e.Event.Msg)
		fmt.Fprintf(&b, ", msg %s", msg)
	}
	fmt.Fprintf(&b, ") is not a step of the spec: %s", e.Reason)
	for k, want := range e.Expected {
		if k == 3 {
			fmt.Fprintf(&b, "\n  ... %d more candidate successors", len(e.Expected)-k)
			break
		}
		fmt.Fprintf(&b, "\n  candidate %d: %-16s %-28s %s", k+1, "field", "logged", "spec")
		for _, d := range diffNodeState(e.Logged, want) {
			fmt.Fprintf(&b, "\n               %-16s %-28s %s", d[0], d[1], d[2])
		}
	}
	return b.String()
}

// nodeStateFields lists the comparable fields of a logged node state; a
// field the emitter left out (nil) is not compared.
func nodeStateFields(n *trace.NodeState) map[string]any {
	f := map[string]any{
		"currentTerm": n.CurrentTerm, "state": n.State, "votedFor": n.VotedFor,
		"log": n.Log, "commitIndex": n.CommitIndex,
	}
	if n.Log == nil {
		f["log"] = []trace.Entry{}
	}
	if n.VotesResponded != nil {
		f["votesResponded"] = *n.VotesResponded
	}
	if n.VotesGranted != nil {
		f["votesGranted"] = *n.VotesGranted
	}
	if n.NextIndex != nil {
		f["nextIndex"] = n.NextIndex
	}
	if n.MatchIndex != nil {
		f["matchIndex"] = n.MatchIndex
	}
	if n.DurableLen != nil {
		f["durableLen"] = *n.DurableLen
	}
	if n.LearnedCommit != nil {
		f["learnedCommit"] = *n.LearnedCommit
	}
	if n.Verdict != "" {
		f["verdict"] = n.Verdict
	}
	if n.TruncatedAtTerm != nil {
		f["truncatedAtTerm"] = *n.TruncatedAtTerm
	}
	return f
}

var nodeStateOrder = []string{"currentTerm", "state", "votedFor", "log", "commitIndex", "votesResponded",
	"votesGranted", "nextIndex", "matchIndex", "durableLen", "learnedCommit", "verdict", "truncatedAtTerm"}

// diffNodeState lists (field, logged, spec) for every field the trace logs
// that differs from the spec's.
func diffNodeState(logged, spec *trace.NodeState) [][3]string {
	if logged == nil {
		return nil
	}
	lf, sf := nodeStateFields(logged), nodeStateFields(spec)
	var out [][3]string
	for _, name := range nodeStateOrder {
		lv, ok := lf[name]
		if !ok {
			continue
		}
		if sv := sf[name]; !reflect.DeepEqual(lv, sv) {
			lj, _ := json.Marshal(lv)
			sj, _ := json.Marshal(sv)
			out = append(out, [3]string{name, string(lj), string(sj)})
		}
	}
	return out
}

// TraceModel builds the model a trace's Init event describes, without
// bounds: a trace is checked against the protocol, not the explorer's
// search limits.
func TraceModel(c *trace.Config) (*Model, error) {
	p, err := ParseProfile(c.Profile)
	if err != nil {
		return nil, err
	}
	cfg := Config{Profile: p, Servers: c.Servers, Values: c.Values,
		MaxTerm: 200, MaxLog: 100, MaxDup: 200, MaxMsgs: math.MaxInt32}
	if p == ProfileDurable {
		cfg.Crashes, cfg.Corruptions = c.Crashes, c.Corruptions
		if cfg.Bugs, err = ParseBugs(c.Bugs); err != nil {
			return nil, err
		}
		cfg.Production = c.Production
	}
	return NewModel(cfg)
}

// CheckTraceReader decodes and checks a trace.
func CheckTraceReader(r io.Reader) (int, error) {
	events, err := trace.Decode(r)
	if err != nil {
		return 0, err
	}
	return len(events), CheckTrace(events)
}

// CheckTrace replays a trace against the spec: starting from Init, each
// event must be a step of the action it names, with its parameters and
// choices, whose post-state of the node agrees with every field the event
// logs. Where the trace leaves out history fields (mlog), every spec state
// consistent with the prefix is kept. It returns a *TraceMismatch for the
// first event no spec step explains.
func CheckTrace(events []trace.Event) error {
	if len(events) == 0 || events[0].Action != "Init" || events[0].Config == nil {
		return fmt.Errorf("spec: trace does not start with Init")
	}
	m, err := TraceModel(events[0].Config)
	if err != nil {
		return fmt.Errorf("spec: trace config: %w", err)
	}
	frontier := []*State{m.Init()}
	var buf []byte
	for k := 1; k < len(events); k++ {
		e := events[k]
		l, msg, err := m.labelFromEvent(&e)
		if err != nil {
			return &TraceMismatch{Seq: e.Seq, Event: e, Reason: err.Error(), Logged: e.State}
		}
		seen := map[uint64]bool{}
		inBag := false
		var next []*State
		var expected []*trace.NodeState
		accept := func(succ State, got Label) {
			n := &succ
			ns := m.NodeState(n, l.I)
			if len(diffNodeState(e.State, ns)) > 0 {
				expected = append(expected, ns)
				return
			}
			// States that differ only in history variables (a trace has no
			// mlog) have the same futures: keep one.
			buf = m.EncodeProtocol(buf[:0], n)
			if fp := Fingerprint(buf); !seen[fp] {
				seen[fp] = true
				next = append(next, n)
			}
		}
		for _, s := range frontier {
			if msg == nil {
				m.Step(s, l, accept)
				continue
			}
			// The trace has no mlog: try every message of the bag that
			// agrees with it on the other fields.
			for _, be := range s.Messages {
				cand := be.M
				cand.Mlog = msg.Mlog
				if cand == *msg {
					inBag = true
					l.Msg = be.M
					m.Step(s, l, accept)
				}
			}
		}
		if len(next) == 0 {
			reason := "the action is not enabled in any spec state the trace can be in"
			if msg != nil && !inBag {
				reason = "no such message is in the bag"
			}
			if len(expected) > 0 {
				reason = "the logged post-state differs from every spec successor"
			}
			return &TraceMismatch{Seq: e.Seq, Event: e, Reason: reason, Logged: e.State, Expected: expected}
		}
		if len(next) > maxFrontier {
			return fmt.Errorf("spec: trace event %d is consistent with %d spec states; too ambiguous to check", e.Seq, len(next))
		}
		frontier = next
	}
	return nil
}

// labelFromEvent builds the step label an event names; msg is the message
// for message actions (its Mlog is empty).
func (m *Model) labelFromEvent(e *trace.Event) (Label, *Message, error) {
	var l Label
	a, ok := ParseAction(e.Action)
	if !ok {
		return l, nil, fmt.Errorf("unknown action %q", e.Action)
	}
	l.Action = a
	i, err := parseServer(e.Node, len(m.servers))
	if err != nil {
		return l, nil, err
	}
	l.I = i
	if e.Peer != "" {
		if l.J, err = parseServer(e.Peer, len(m.servers)); err != nil {
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
		if e.Value == nil || *e.Value < 1 || *e.Value > len(m.values) {
			return l, nil, fmt.Errorf("ClientRequest needs a value in 1..%d", len(m.values))
		}
		l.Value = uint8(*e.Value)
	case ActCrash, ActCorrupt:
		if e.Cut == nil || *e.Cut > 255 {
			return l, nil, fmt.Errorf("%s needs a cut point", e.Action)
		}
		l.Cut = uint8(*e.Cut)
	case ActFlushTo: // the new durable length; optional
		if e.Cut != nil {
			if *e.Cut < 1 || *e.Cut > 255 {
				return l, nil, fmt.Errorf("FlushTo's cut %d out of range", *e.Cut)
			}
			l.Cut = uint8(*e.Cut)
		}
	case ActRequestVote, ActAppendEntries, ActSendAppendEntries:
		if e.Peer == "" {
			return l, nil, fmt.Errorf("%s needs a peer", e.Action)
		}
	}
	if a == ActSendAppendEntries {
		// The message sent, without mlog, fixes the range.
		if e.Msg == nil {
			return l, nil, fmt.Errorf("%s needs the message it sends", e.Action)
		}
		msg, err := m.messageFromTrace(e.Msg)
		if err != nil {
			return l, nil, err
		}
		if msg.Msource != i || msg.Mdest != l.J {
			return l, nil, fmt.Errorf("%s: message from %s to %s, event from %s to %s", e.Action, e.Msg.Msource, e.Msg.Mdest, e.Node, e.Peer)
		}
		l.Msg = msg
		return l, nil, nil
	}
	if !a.ReceivesMessage() {
		return l, nil, nil
	}
	if e.Msg == nil {
		return l, nil, fmt.Errorf("%s needs a message", e.Action)
	}
	msg, err := m.messageFromTrace(e.Msg)
	if err != nil {
		return l, nil, err
	}
	if msg.Mdest != i {
		return l, nil, fmt.Errorf("node %s is not the message's destination %s", e.Node, e.Msg.Mdest)
	}
	return l, &msg, nil
}
