package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Limits on decoded values: a trace is input and is never trusted.
const (
	maxLineBytes = 1 << 20
	maxCount     = 1 << 16 // terms, indexes, values, cut points
	maxLogLen    = 1 << 12
)

// Writer writes events as ndjson, numbering them.
type Writer struct {
	w   *bufio.Writer
	seq int
	err error
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriter(w)} }

// Write stamps e with the version and the next sequence number and writes
// it as one line.
func (tw *Writer) Write(e Event) error {
	if tw.err != nil {
		return tw.err
	}
	e.V, e.Seq = Version, tw.seq
	b, err := json.Marshal(e)
	if err != nil {
		tw.err = fmt.Errorf("trace: encode event %d: %w", tw.seq, err)
		return tw.err
	}
	b = append(b, '\n')
	if _, err := tw.w.Write(b); err != nil {
		tw.err = fmt.Errorf("trace: write event %d: %w", tw.seq, err)
		return tw.err
	}
	tw.seq++
	return nil
}

// Flush flushes buffered events.
func (tw *Writer) Flush() error {
	if tw.err != nil {
		return tw.err
	}
	return tw.w.Flush()
}

func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data")
	}
	return nil
}

// Decode reads and validates a whole trace.
func Decode(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLineBytes)
	var events []Event
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e Event
		if err := strictUnmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("trace: line %d: %w", line, err)
		}
		if err := e.Validate(len(events)); err != nil {
			return nil, fmt.Errorf("trace: line %d: %w", line, err)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace: line %d: %w", line+1, err)
	}
	if len(events) == 0 {
		return nil, errors.New("trace: empty")
	}
	return events, nil
}

func inRange(name string, v int) error {
	if v < 0 || v > maxCount {
		return fmt.Errorf("%s %d out of range", name, v)
	}
	return nil
}

// Validate checks one event that should be number seq of its trace.
func (e *Event) Validate(seq int) error {
	if e.V != Version {
		return fmt.Errorf("version %d, want %d", e.V, Version)
	}
	if e.Seq != seq {
		return fmt.Errorf("seq %d, want %d", e.Seq, seq)
	}
	if !slices.Contains(Actions, e.Action) {
		return fmt.Errorf("unknown action %q", e.Action)
	}
	if (seq == 0) != (e.Action == "Init") {
		return fmt.Errorf("action %s at seq %d: Init comes first and only first", e.Action, seq)
	}
	if e.Action == "Init" {
		return e.Config.validate()
	}
	if e.Config != nil {
		return errors.New("config on a step event")
	}
	if !ValidServer(e.Node) {
		return fmt.Errorf("node %q", e.Node)
	}
	if e.Peer != "" && !ValidServer(e.Peer) {
		return fmt.Errorf("peer %q", e.Peer)
	}
	if e.Branch != "" && !slices.Contains(Branches, e.Branch) {
		return fmt.Errorf("unknown branch %q", e.Branch)
	}
	if e.Value != nil {
		if err := inRange("value", *e.Value); err != nil {
			return err
		}
	}
	if e.Cut != nil {
		if err := inRange("cut", *e.Cut); err != nil {
			return err
		}
	}
	if e.Msg != nil {
		if err := e.Msg.validate(); err != nil {
			return err
		}
	}
	if e.State != nil {
		if err := e.State.validate(); err != nil {
			return fmt.Errorf("state: %w", err)
		}
	}
	return nil
}

func (c *Config) validate() error {
	if c == nil {
		return errors.New("Init without config")
	}
	if c.Profile != "raft" && c.Profile != "durable" {
		return fmt.Errorf("profile %q", c.Profile)
	}
	if c.Servers < 1 || c.Servers > 9 || c.Values < 1 || c.Values > maxCount {
		return fmt.Errorf("servers %d values %d out of range", c.Servers, c.Values)
	}
	if err := inRange("crashes", c.Crashes); err != nil {
		return err
	}
	return inRange("corruptions", c.Corruptions)
}

func validateLog(name string, log []Entry) error {
	if len(log) > maxLogLen {
		return fmt.Errorf("%s of %d entries", name, len(log))
	}
	for _, e := range log {
		if e.Term < 1 || e.Term > maxCount || e.Value < 0 || e.Value > maxCount {
			return fmt.Errorf("%s entry %+v out of range", name, e)
		}
	}
	return nil
}

func (m *Message) validate() error {
	if !ValidServer(m.Msource) || !ValidServer(m.Mdest) {
		return fmt.Errorf("message between %q and %q", m.Msource, m.Mdest)
	}
	for _, v := range []int{m.Mterm, m.MlastLogTerm, m.MlastLogIndex, m.MprevLogIndex, m.MprevLogTerm, m.McommitIndex, m.MmatchIndex} {
		if err := inRange("message field", v); err != nil {
			return err
		}
	}
	if m.MleaderCommit != nil {
		if err := inRange("mleaderCommit", *m.MleaderCommit); err != nil {
			return err
		}
	}
	return validateLog("mentries", m.Mentries)
}

func (n *NodeState) validate() error {
	if n.State != "Follower" && n.State != "Candidate" && n.State != "Leader" {
		return fmt.Errorf("state %q", n.State)
	}
	if n.VotedFor != "Nil" && !ValidServer(n.VotedFor) {
		return fmt.Errorf("votedFor %q", n.VotedFor)
	}
	if n.Verdict != "" && n.Verdict != "CLEAN" && n.Verdict != "TRUNCATED" {
		return fmt.Errorf("verdict %q", n.Verdict)
	}
	for _, v := range []int{n.CurrentTerm, n.CommitIndex} {
		if err := inRange("term or index", v); err != nil {
			return err
		}
	}
	for _, p := range []*int{n.DurableLen, n.LearnedCommit, n.TruncatedAtTerm} {
		if p != nil {
			if err := inRange("durable field", *p); err != nil {
				return err
			}
		}
	}
	for _, set := range []*[]string{n.VotesResponded, n.VotesGranted} {
		if set == nil {
			continue
		}
		for _, s := range *set {
			if !ValidServer(s) {
				return fmt.Errorf("server %q in a vote set", s)
			}
		}
	}
	for _, idx := range []map[string]int{n.NextIndex, n.MatchIndex} {
		for s, v := range idx {
			if !ValidServer(s) {
				return fmt.Errorf("server %q in an index map", s)
			}
			if err := inRange("index", v); err != nil {
				return err
			}
		}
	}
	return validateLog("log", n.Log)
}
