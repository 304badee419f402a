package viz

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

// Source is one trace file.
type Source struct {
	Name string
	R    io.Reader
}

// Options tune Build.
type Options struct {
	Title string
	// Check runs the trace checker (spec.CheckTrace) along and marks the
	// first event it rejects.
	Check bool
	// Invariants replays the run through the explorer's model, where its
	// numbers fit (spec traces, small impl runs), and evaluates every
	// invariant after each step.
	Invariants bool
	// TornTail drops a torn last line (a writer killed inside it).
	TornTail bool
	// MaxEvents bounds the events read (0: no bound): a page is for a
	// browser.
	MaxEvents int
	// Merged, when set and several files are merged, receives the merged
	// run as one trace (version 2, renumbered), for raftspec check-trace
	// and TLC.
	Merged io.Writer
}

// DefaultMaxEvents is the bound raftspec viz uses: 10^6 events is about
// 150 MB of page.
const DefaultMaxEvents = 1_000_000

// Build reads one trace, or several files of one cluster (one per node
// and boot, as raftd --trace writes them: they are merged so that every
// receive follows its send), and returns the page that draws it.
func Build(sources []Source, opt Options) (*Page, error) {
	if len(sources) == 0 {
		return nil, errors.New("viz: no trace")
	}
	if len(sources) == 1 {
		return buildOne(sources[0], opt)
	}
	return buildMerged(sources, opt)
}

func buildOne(src Source, opt Options) (*Page, error) {
	rd := trace.NewReader(src.R, trace.ReadOptions{TornTail: opt.TornTail})
	init, err := rd.Next()
	if err != nil {
		return nil, fmt.Errorf("viz: %s: %w", src.Name, err)
	}
	b, err := newBuilder(&init, []string{src.Name}, opt)
	if err != nil {
		return nil, fmt.Errorf("viz: %s: %w", src.Name, err)
	}
	b.page.Version = rd.Version()
	for {
		e, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("viz: %s: %w", src.Name, err)
		}
		if opt.MaxEvents > 0 && len(b.page.Events) >= opt.MaxEvents {
			return nil, fmt.Errorf("viz: %s: more than %d events", src.Name, opt.MaxEvents)
		}
		b.add(&e, 0)
	}
	if rd.Torn() {
		b.page.Notes = append(b.page.Notes, "a torn last line was dropped")
	}
	return b.finish(), nil
}

// builder turns events into a page, one at a time.
type builder struct {
	page                                *Page
	opt                                 Options
	names                               map[string]int // name → 1-based node
	durable                             bool
	advertiseAppended, advertiseLearned bool
	logs                                [][]trace.Entry // logs[node]: the node's log after its last state
	last                                []*State        // last[node]: its last state
	bag                                 map[string][]int
	env                                 map[envelope][]int
	actions                             map[string]int
	checker                             *spec.TraceChecker
	replay                              *replayer
	window                              *window
}

type envelope struct{ typ, term, from, to int }

func newBuilder(init *trace.Event, files []string, opt Options) (*builder, error) {
	if init.Action != "Init" || init.Config == nil {
		return nil, errors.New("the trace does not start with Init")
	}
	c := init.Config
	names := c.ServerNames()
	title := opt.Title
	if title == "" {
		title = defaultTitle(files)
	}
	b := &builder{
		page: &Page{Title: title, Files: files, Config: c, Names: names, Actions: slices.Clone(trace.Actions)},
		opt:  opt, names: map[string]int{}, durable: c.Profile == "durable",
		logs: make([][]trace.Entry, len(names)+1), last: make([]*State, len(names)+1),
		bag: map[string][]int{}, env: map[envelope][]int{}, actions: map[string]int{},
		window: newWindow(c, len(names)),
	}
	for _, bug := range strings.Split(c.Bugs, ",") {
		switch bug {
		case "candidate-advertises-appended":
			b.advertiseAppended = true
		case "candidate-advertises-learned":
			b.advertiseLearned = true
		}
	}
	for k, a := range b.page.Actions {
		b.actions[a] = k
	}
	for k, n := range names {
		b.names[n] = k + 1
	}
	if opt.Check {
		ch, err := spec.NewTraceChecker(init)
		if err != nil {
			b.page.Check = &Check{OK: false, Event: -1, Reason: err.Error()}
		} else {
			b.checker = ch
			b.page.Check = &Check{OK: true, Event: -1}
		}
	}
	if opt.Invariants {
		b.replay = newReplayer(c)
	}
	return b, nil
}

func (b *builder) node(name string) int { return b.names[name] }

// add appends one event (validated by trace.Reader) of file f.
func (b *builder) add(e *trace.Event, f int) {
	idx := len(b.page.Events)
	b.check(e, idx)
	ev := Event{Seq: e.Seq, File: f, Action: b.actions[e.Action], Node: b.node(e.Node), Peer: b.node(e.Peer),
		Branch: e.Branch, Value: e.Value, Cut: e.Cut}
	var pre *State
	if ev.Node > 0 {
		pre = b.last[ev.Node]
	}
	if e.State != nil && ev.Node > 0 {
		ev.State = b.state(ev.Node, e.State)
		b.last[ev.Node] = ev.State
	}
	if e.Msg != nil && receives(e.Action) {
		b.receive(&ev, e, idx)
	}
	for _, id := range b.window.step(e.Action, ev.Node, pre, ev.State) {
		b.enter(id)
	}
	for _, m := range b.sends(&ev, e, pre) {
		id := len(b.page.Msgs)
		m.Send, m.End = idx, -1
		b.page.Msgs = append(b.page.Msgs, m)
		if b.window.holds(ev.Node, ev.State, &m) {
			b.window.held[ev.Node] = append(b.window.held[ev.Node], id)
		} else {
			b.enter(id)
		}
		ev.Out = append(ev.Out, id)
	}
	b.page.Events = append(b.page.Events, ev)
	if b.replay != nil {
		b.replay.step(e, b.logs[ev.Node], idx)
	}
}

// check feeds the trace checker; the first rejection is kept.
func (b *builder) check(e *trace.Event, idx int) {
	if b.checker == nil {
		return
	}
	ce := *e
	ce.Seq = idx + 1 // merged files are renumbered
	if err := b.checker.Step(&ce); err != nil {
		b.page.Check = &Check{OK: false, Event: idx, Reason: err.Error()}
		b.checker = nil
	}
}

// state converts a post-state and follows the node's log.
func (b *builder) state(n int, s *trace.NodeState) *State {
	st := &State{Term: s.CurrentTerm, Commit: s.CommitIndex, VotedFor: b.node(s.VotedFor),
		Durable: s.DurableLen, Learned: s.LearnedCommit, Verdict: s.Verdict, TruncatedAt: s.TruncatedAtTerm}
	switch s.State {
	case "Candidate":
		st.Role = 1
	case "Leader":
		st.Role = 2
	}
	if s.LogKeep != nil { // version 2: a change of the node's log
		st.Keep = *s.LogKeep
		b.logs[n] = trace.AppendRuns(b.logs[n][:st.Keep], s.LogAppend)
		st.Append = runsOf(s.LogAppend)
	} else { // version 1: the whole log
		keep, app := trace.Delta(b.logs[n], s.Log)
		st.Keep, st.Append = keep, runsOf(app)
		b.logs[n] = append(b.logs[n][:0], s.Log...)
	}
	st.Len = len(b.logs[n])
	st.VotesResponded, st.VotesGranted = b.set(s.VotesResponded), b.set(s.VotesGranted)
	st.NextIndex, st.MatchIndex = b.indexMap(s.NextIndex), b.indexMap(s.MatchIndex)
	return st
}

func runsOf(runs []trace.Run) [][]int {
	var out [][]int
	for _, r := range runs {
		out = append(out, append([]int{r.Term}, r.Values...))
	}
	return out
}

func entryRuns(entries []trace.Entry) [][]int { return runsOf(trace.Runs(entries)) }

func (b *builder) set(names *[]string) *[]int {
	if names == nil {
		return nil
	}
	out := []int{}
	for _, n := range *names {
		out = append(out, b.node(n))
	}
	return &out
}

func (b *builder) indexMap(m map[string]int) []int {
	if m == nil {
		return nil
	}
	out := make([]int, len(b.page.Names))
	for n, v := range m {
		if k := b.node(n); k > 0 {
			out[k-1] = v
		}
	}
	return out
}

// finish closes the page.
func (b *builder) finish() *Page {
	p := b.page
	for k := range p.Msgs {
		if p.Msgs[k].End < 0 {
			p.Stats.InFlight++
		}
	}
	p.Stats.Messages = len(p.Msgs)
	if b.replay != nil {
		p.Inv = b.replay.report()
	}
	if p.Msgs == nil {
		p.Msgs = []Msg{}
	}
	if p.Events == nil {
		p.Events = []Event{}
	}
	return p
}

// defaultTitle names a page by its file, or by the directory of its files.
func defaultTitle(files []string) string {
	if len(files) == 1 {
		return files[0]
	}
	dir := filepath.Dir(files[0])
	for _, f := range files[1:] {
		if filepath.Dir(f) != dir {
			return strings.Join(files, ", ")
		}
	}
	return fmt.Sprintf("%s (%d files)", dir, len(files))
}
