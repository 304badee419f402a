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

// Limits on decoded values: a trace is input and is never trusted. Each is
// checked before what it bounds is allocated or used.
const (
	// MaxLineBytes bounds one line (a version 2 boot event carries the
	// whole recovered log, about two bytes per entry).
	MaxLineBytes = 16 << 20
	// MaxServers bounds config.servers.
	MaxServers = 64
	// maxCountV1 bounds version 1's terms, indexes, values and cut points.
	maxCountV1 = 1 << 16
	// MaxIndex bounds version 2's terms, indexes, lengths, cut points and
	// budgets: 64-bit, with room for the spec's arithmetic (prev + n) to
	// stay exact.
	MaxIndex = 1 << 62
	// maxValue bounds values (an entry's value, ClientRequest's v).
	maxValue = 1 << 16
	// maxEntries bounds a version 1 log and any message's mentries.
	maxEntries = 1 << 12
	// MaxAppend bounds the entries one version 2 event appends.
	MaxAppend = 1 << 22
)

// ErrTornLine is wrapped by the error for a last line that the input ends
// inside of: no newline after it and not a complete JSON object, as when
// the writer was killed in the middle of a line.
var ErrTornLine = errors.New("torn last line")

// Writer writes events as ndjson, numbering them.
type Writer struct {
	w       *bufio.Writer
	version int
	seq     int
	err     error
}

// NewWriter returns a Writer of the current [Version] on w. The events
// must have version 2's shape: a state's log as LogKeep and LogAppend.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriter(w), version: Version} }

// NewWriterVersion returns a Writer that stamps version v (MinVersion ..
// Version) on every event; the caller gives the events that version's
// shape.
func NewWriterVersion(w io.Writer, v int) *Writer {
	return &Writer{w: bufio.NewWriter(w), version: v}
}

// Write stamps e with the writer's version and the next sequence number
// and writes it as one line.
func (tw *Writer) Write(e Event) error {
	if tw.err != nil {
		return tw.err
	}
	e.V, e.Seq = tw.version, tw.seq
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

// ReadOptions tune a Reader.
type ReadOptions struct {
	// TornTail drops a torn last line (see ErrTornLine) instead of
	// failing; Reader.Torn reports that it did. For traces of processes
	// that were killed.
	TornTail bool
}

// Reader reads and validates a trace line by line: version 1 or 2, the
// same version on every line, Init first, seq without gaps, known
// actions, branches and message types, the exact fields of each message
// type, servers among the config's names, values within the limits, and
// in version 2 every log change applicable to the node's previous log.
type Reader struct {
	sc   *bufio.Scanner
	opt  ReadOptions
	line int
	// lastNoNewline: the line just scanned ends the input without a
	// newline.
	lastNoNewline bool
	torn          bool
	seq           int
	ctx           *context
	err           error
}

// context is what validating a step needs from line 0 and the lines
// before.
type context struct {
	version int
	names   map[string]bool
	logLen  map[string]int // version 2: each node's log length at its previous event with a state
}

// NewReader returns a Reader on r.
func NewReader(r io.Reader, opt ReadOptions) *Reader {
	rd := &Reader{opt: opt}
	rd.sc = bufio.NewScanner(r)
	rd.sc.Buffer(make([]byte, 64*1024), MaxLineBytes)
	rd.sc.Split(rd.splitLines)
	return rd
}

// splitLines is bufio.ScanLines, remembering whether the last line had no
// newline.
func (rd *Reader) splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		rd.lastNoNewline = false
		return i + 1, bytes.TrimSuffix(data[:i], []byte{'\r'}), nil
	}
	if atEOF {
		rd.lastNoNewline = true
		return len(data), data, nil
	}
	return 0, nil, nil
}

// Torn reports whether a torn last line was dropped (ReadOptions.TornTail).
func (rd *Reader) Torn() bool { return rd.torn }

// Version is the trace's version, once line 0 is read.
func (rd *Reader) Version() int {
	if rd.ctx == nil {
		return 0
	}
	return rd.ctx.version
}

// Next returns the next event, or io.EOF after the last one.
func (rd *Reader) Next() (Event, error) {
	if rd.err != nil {
		return Event{}, rd.err
	}
	e, err := rd.next()
	if err != nil {
		rd.err = err
	}
	return e, err
}

func (rd *Reader) next() (Event, error) {
	for rd.sc.Scan() {
		rd.line++
		b := bytes.TrimSpace(rd.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e Event
		if err := strictUnmarshal(b, &e); err != nil {
			var syntax *json.SyntaxError
			if rd.lastNoNewline && (errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &syntax)) {
				if rd.opt.TornTail {
					rd.torn = true
					return Event{}, rd.end()
				}
				return Event{}, fmt.Errorf("trace: line %d: %w (the input ends inside it without a newline; was the writer killed?): %v",
					rd.line, ErrTornLine, err)
			}
			return Event{}, fmt.Errorf("trace: line %d: %w", rd.line, err)
		}
		if err := rd.validate(&e); err != nil {
			return Event{}, fmt.Errorf("trace: line %d: %w", rd.line, err)
		}
		rd.seq++
		return e, nil
	}
	if err := rd.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Event{}, fmt.Errorf("trace: line %d: longer than %d bytes", rd.line+1, MaxLineBytes)
		}
		return Event{}, fmt.Errorf("trace: line %d: %w", rd.line+1, err)
	}
	return Event{}, rd.end()
}

func (rd *Reader) end() error {
	if rd.seq == 0 {
		return errors.New("trace: empty")
	}
	return io.EOF
}

// Decode reads and validates a whole trace.
func Decode(r io.Reader) ([]Event, error) {
	return DecodeOptions(r, ReadOptions{})
}

// DecodeOptions is Decode with options.
func DecodeOptions(r io.Reader, opt ReadOptions) ([]Event, error) {
	rd := NewReader(r, opt)
	var events []Event
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
}

func (rd *Reader) validate(e *Event) error {
	if e.V < MinVersion || e.V > Version {
		return fmt.Errorf("version %d, want %d..%d", e.V, MinVersion, Version)
	}
	if rd.ctx != nil && e.V != rd.ctx.version {
		return fmt.Errorf("version %d in a version %d trace", e.V, rd.ctx.version)
	}
	if e.Seq != rd.seq {
		return fmt.Errorf("seq %d, want %d", e.Seq, rd.seq)
	}
	if !slices.Contains(Actions, e.Action) {
		return fmt.Errorf("unknown action %q", e.Action)
	}
	if (rd.seq == 0) != (e.Action == "Init") {
		return fmt.Errorf("action %s at seq %d: Init comes first and only first", e.Action, rd.seq)
	}
	if e.Action == "Init" {
		ctx, err := newContext(e)
		if err != nil {
			return err
		}
		rd.ctx = ctx
		return nil
	}
	return rd.ctx.step(e)
}

func newContext(e *Event) (*context, error) {
	c := e.Config
	if c == nil {
		return nil, errors.New("Init without config")
	}
	if e.Node != "" || e.Peer != "" || e.Msg != nil || e.Branch != "" || e.Value != nil || e.Cut != nil || e.State != nil {
		return nil, errors.New("Init with step fields")
	}
	if c.Profile != "raft" && c.Profile != "durable" {
		return nil, fmt.Errorf("profile %q", c.Profile)
	}
	ctx := &context{version: e.V, names: map[string]bool{}, logLen: map[string]int{}}
	maxServers, maxCount := MaxServers, MaxIndex
	if e.V == 1 {
		maxServers, maxCount = 9, maxCountV1
	}
	if c.Servers < 1 || c.Servers > maxServers || c.Values < 1 || c.Values > maxValue {
		return nil, fmt.Errorf("servers %d values %d out of range", c.Servers, c.Values)
	}
	if c.Crashes < 0 || c.Crashes > maxCount || c.Corruptions < 0 || c.Corruptions > maxCount {
		return nil, fmt.Errorf("crashes %d corruptions %d out of range", c.Crashes, c.Corruptions)
	}
	if c.Names != nil {
		if e.V == 1 {
			return nil, errors.New("names in a version 1 config")
		}
		if len(c.Names) != c.Servers {
			return nil, fmt.Errorf("%d names for %d servers", len(c.Names), c.Servers)
		}
		for _, n := range c.Names {
			if !ValidName(n) {
				return nil, fmt.Errorf("server name %q", n)
			}
			if ctx.names[n] {
				return nil, fmt.Errorf("server name %q twice", n)
			}
			ctx.names[n] = true
		}
		return ctx, nil
	}
	for _, n := range DefaultNames(c.Servers) {
		ctx.names[n] = true
	}
	return ctx, nil
}

func (c *context) maxCount() int {
	if c.version == 1 {
		return maxCountV1
	}
	return MaxIndex
}

func (c *context) inRange(name string, v int) error {
	if v < 0 || v > c.maxCount() {
		return fmt.Errorf("%s %d out of range", name, v)
	}
	return nil
}

func (c *context) server(what, n string) error {
	if !c.names[n] {
		return fmt.Errorf("%s %q is not a server of the config", what, n)
	}
	return nil
}

// step validates a step event.
func (c *context) step(e *Event) error {
	if e.Config != nil {
		return errors.New("config on a step event")
	}
	if err := c.server("node", e.Node); err != nil {
		return err
	}
	if e.Peer != "" {
		if err := c.server("peer", e.Peer); err != nil {
			return err
		}
	}
	if e.Branch != "" && !slices.Contains(Branches, e.Branch) {
		return fmt.Errorf("unknown branch %q", e.Branch)
	}
	if e.Value != nil && (*e.Value < 0 || *e.Value > maxValue) {
		return fmt.Errorf("value %d out of range", *e.Value)
	}
	if e.Cut != nil {
		if err := c.inRange("cut", *e.Cut); err != nil {
			return err
		}
	}
	if e.Msg != nil {
		if err := c.message(e.Msg); err != nil {
			return err
		}
	}
	if e.State != nil {
		if err := c.nodeState(e.Node, e.State); err != nil {
			return fmt.Errorf("state: %w", err)
		}
	}
	return nil
}

func (c *context) entries(name string, log []Entry) error {
	if len(log) > maxEntries {
		return fmt.Errorf("%s of %d entries", name, len(log))
	}
	for _, e := range log {
		if e.Term < 1 || e.Term > c.maxCount() || e.Value < 0 || e.Value > maxValue {
			return fmt.Errorf("%s entry %+v out of range", name, e)
		}
	}
	return nil
}

func (c *context) message(m *Message) error {
	if err := c.server("message source", m.Msource); err != nil {
		return err
	}
	if err := c.server("message destination", m.Mdest); err != nil {
		return err
	}
	for _, v := range []int{m.Mterm, m.MlastLogTerm, m.MlastLogIndex, m.MprevLogIndex, m.MprevLogTerm, m.McommitIndex, m.MmatchIndex} {
		if err := c.inRange("message field", v); err != nil {
			return err
		}
	}
	if m.MleaderCommit != nil {
		if err := c.inRange("mleaderCommit", *m.MleaderCommit); err != nil {
			return err
		}
	}
	if m.Mtype == "RepairResponse" && len(m.Mprefix) > 0 {
		if _, err := c.runs(m.Mprefix); err != nil {
			return fmt.Errorf("mprefix: %w", err)
		}
	}
	if m.Mtype == "InstallSnapshotRequest" {
		if len(m.Mprefix) == 0 {
			return errors.New("InstallSnapshotRequest with an empty mprefix")
		}
		if _, err := c.runs(m.Mprefix); err != nil {
			return fmt.Errorf("mprefix: %w", err)
		}
	}
	return c.entries("mentries", m.Mentries)
}

func (c *context) nodeState(node string, n *NodeState) error {
	if n.State != "Follower" && n.State != "Candidate" && n.State != "Leader" {
		return fmt.Errorf("state %q", n.State)
	}
	if n.VotedFor != "Nil" {
		if err := c.server("votedFor", n.VotedFor); err != nil {
			return err
		}
	}
	if n.Verdict != "" && n.Verdict != "CLEAN" && n.Verdict != "TRUNCATED" && n.Verdict != "AMBIGUOUS" {
		return fmt.Errorf("verdict %q", n.Verdict)
	}
	for _, v := range []int{n.CurrentTerm, n.CommitIndex} {
		if err := c.inRange("term or index", v); err != nil {
			return err
		}
	}
	for _, p := range []*int{n.DurableLen, n.LearnedCommit, n.TruncatedAtTerm} {
		if p != nil {
			if err := c.inRange("durable field", *p); err != nil {
				return err
			}
		}
	}
	for _, set := range []*[]string{n.VotesResponded, n.VotesGranted} {
		if set == nil {
			continue
		}
		for _, s := range *set {
			if err := c.server("vote set member", s); err != nil {
				return err
			}
		}
	}
	for _, idx := range []map[string]int{n.NextIndex, n.MatchIndex} {
		for s, v := range idx {
			if err := c.server("index map key", s); err != nil {
				return err
			}
			if err := c.inRange("index", v); err != nil {
				return err
			}
		}
	}
	if c.version == 1 {
		if n.LogKeep != nil || n.LogAppend != nil {
			return errors.New("logKeep or logAppend in version 1")
		}
		return c.entries("log", n.Log)
	}
	return c.logDelta(node, n)
}

// logDelta checks a version 2 log change against the node's previous log
// length and records the new length.
func (c *context) logDelta(node string, n *NodeState) error {
	if n.Log != nil {
		return errors.New("a whole log in version 2 (want logKeep, logAppend)")
	}
	if n.LogKeep == nil {
		return errors.New("no logKeep")
	}
	keep, prev := *n.LogKeep, c.logLen[node]
	if keep < 0 || keep > prev {
		return fmt.Errorf("logKeep %d: node %s logged %d entries last", keep, node, prev)
	}
	total, err := c.runs(n.LogAppend)
	if err != nil {
		return err
	}
	if keep+total > MaxIndex {
		return fmt.Errorf("log of %d entries", keep+total)
	}
	c.logLen[node] = keep + total
	return nil
}

// runs checks a run list and returns how many entries it holds. Adjacent
// runs have different terms, so that a log has one representation.
func (c *context) runs(runs []Run) (int, error) {
	if runs != nil && len(runs) == 0 {
		return 0, errors.New("empty logAppend (leave it out)")
	}
	total := 0
	for k, r := range runs {
		if r.Term < 1 || r.Term > MaxIndex {
			return 0, fmt.Errorf("run term %d out of range", r.Term)
		}
		if k > 0 && runs[k-1].Term == r.Term {
			return 0, fmt.Errorf("two adjacent runs of term %d", r.Term)
		}
		if len(r.Values) == 0 {
			return 0, fmt.Errorf("run of term %d without values", r.Term)
		}
		total += len(r.Values)
		if total > MaxAppend {
			return 0, fmt.Errorf("logAppend of more than %d entries", MaxAppend)
		}
		for _, v := range r.Values {
			if v < 0 || v > maxValue {
				return 0, fmt.Errorf("value %d out of range", v)
			}
		}
	}
	return total, nil
}
