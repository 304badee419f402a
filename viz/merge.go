package viz

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/durableraft/durableraft/trace"
)

// buildMerged draws several trace files of one cluster: raftd --trace
// writes one file per node and boot, each starting with Init, with only
// that node's steps. The files of a node follow each other in boot order
// (the nanoseconds in raftd's names, n<id>-<ns>.ndjson); the nodes are
// interleaved so that every receive comes after its send, taking at each
// point the node furthest behind in its own events. That order is one the
// run could have had, not necessarily the one it had.
//
// When every event of every file carries a logical clock (raftd's Lamport
// clock, trace.Event.Clock), the merge follows it instead: each node's
// clocks must grow strictly through its files in boot order (Init lines
// included: a restart resumes its clock), and the events are taken by
// clock, ties by node; a receive's clock is above its send's, so this is
// the run's own order of causes and effects.
func buildMerged(sources []Source, opt Options) (*Page, error) {
	init, version, files, err := readFiles(sources, opt)
	if err != nil {
		return nil, err
	}
	clocked, err := checkClocks(files)
	if err != nil {
		return nil, err
	}
	streams, names := nodeStreams(files)
	b, err := newBuilder(init, names, opt)
	if err != nil {
		return nil, err
	}
	b.page.Version, b.page.Merged, b.page.ByClock = version, true, clocked
	total := 0
	for _, s := range streams {
		total += len(s.events)
	}
	if opt.MaxEvents > 0 && total > opt.MaxEvents {
		return nil, fmt.Errorf("viz: more than %d events", opt.MaxEvents)
	}
	var out *trace.Writer
	if opt.Merged != nil {
		out = trace.NewWriterVersion(opt.Merged, version)
		out.Write(*init)
	}
	for n := 0; n < total; n++ {
		var s *stream
		if clocked {
			s = byClock(streams)
		} else {
			s = b.pick(streams)
		}
		b.add(&s.events[s.pos], s.file[s.pos])
		if out != nil {
			out.Write(s.events[s.pos])
		}
		s.pos++
	}
	if out != nil {
		if err := out.Flush(); err != nil {
			return nil, fmt.Errorf("viz: write the merged trace: %w", err)
		}
	}
	note := fmt.Sprintf("merged from %d files of %d nodes: every receive after its send; the files carry no clock, so this is one order the run could have had", len(files), len(streams))
	if clocked {
		note = fmt.Sprintf("merged from %d files of %d nodes by their logical clocks: the run's order of causes and effects", len(files), len(streams))
	}
	b.page.Notes = append(b.page.Notes, note)
	return b.finish(), nil
}

// traceFile is one file of a merge: its steps (after Init), the node that
// takes them, its boot time and its Init line's clock.
type traceFile struct {
	name      string
	events    []trace.Event
	node      string
	boot      int64
	initClock uint64
}

// readFiles decodes the files and checks that they are one cluster's,
// each with one node's steps.
func readFiles(sources []Source, opt Options) (*trace.Event, int, []*traceFile, error) {
	var files []*traceFile
	var init *trace.Event
	version := 0
	for _, src := range sources {
		evs, err := trace.DecodeOptions(src.R, trace.ReadOptions{TornTail: opt.TornTail})
		if err != nil {
			return nil, 0, nil, fmt.Errorf("viz: %s: %w", src.Name, err)
		}
		if init == nil {
			init, version = &evs[0], evs[0].V
		} else if err := sameCluster(init.Config, evs[0].Config); err != nil {
			return nil, 0, nil, fmt.Errorf("viz: %s: %w", src.Name, err)
		}
		f := &traceFile{name: src.Name, events: evs[1:], boot: bootTime(src.Name), initClock: evs[0].Clock}
		for _, e := range f.events {
			if e.Node == "" {
				continue
			}
			if f.node == "" {
				f.node = e.Node
			} else if e.Node != f.node && e.Action != "DropMessage" && e.Action != "DuplicateMessage" {
				return nil, 0, nil, fmt.Errorf("viz: %s holds steps of %s and %s: give one trace of a whole run, or one file per node", src.Name, f.node, e.Node)
			}
		}
		files = append(files, f)
	}
	return init, version, files, nil
}

// stream is one node's events: its files in boot order.
type stream struct {
	events []trace.Event
	file   []int // file[k]: the index in Page.Files of events[k]'s file
	pos    int
}

// progress is how far a stream is through its own events.
func (s *stream) progress() float64 { return float64(s.pos) / float64(len(s.events)) }

// nodeStreams groups the files by node, each node's in boot order, and
// returns the file names in the order the streams index them.
func nodeStreams(files []*traceFile) ([]*stream, []string) {
	slices.SortStableFunc(files, func(a, b *traceFile) int {
		if a.boot != b.boot {
			return cmpInt64(a.boot, b.boot)
		}
		return strings.Compare(a.name, b.name)
	})
	var names []string
	byNode := map[string]*stream{}
	var streams []*stream
	for _, f := range files {
		s := byNode[f.node]
		if s == nil {
			s = &stream{}
			byNode[f.node] = s
			streams = append(streams, s)
		}
		names = append(names, f.name)
		for _, e := range f.events {
			s.events = append(s.events, e)
			s.file = append(s.file, len(names)-1)
		}
	}
	return streams, names
}

// checkClocks reports whether every line of every file has a clock, and
// then that each node's clocks grow strictly through its files in boot
// order; a file with clocks and one without are not merged.
func checkClocks(files []*traceFile) (bool, error) {
	with, without := 0, 0
	count := func(c uint64) {
		if c > 0 {
			with++
		} else {
			without++
		}
	}
	for _, f := range files {
		count(f.initClock)
		for k := range f.events {
			count(f.events[k].Clock)
		}
	}
	switch {
	case with == 0:
		return false, nil
	case without > 0:
		return false, fmt.Errorf("viz: %d lines carry a logical clock and %d do not: not one cluster's raftd traces", with, without)
	}
	ordered := slices.Clone(files)
	slices.SortStableFunc(ordered, func(a, b *traceFile) int { return cmpInt64(a.boot, b.boot) })
	last := map[string]uint64{}
	where := map[string]string{}
	for _, f := range ordered {
		node := f.node
		if node == "" {
			continue // an Init alone: nothing to order
		}
		if f.initClock <= last[node] {
			return false, fmt.Errorf("viz: %s: %s's clock goes back at its boot, to %d after %d (%s)", f.name, node, f.initClock, last[node], where[node])
		}
		last[node] = f.initClock
		for k := range f.events {
			c := f.events[k].Clock
			if c <= last[node] {
				return false, fmt.Errorf("viz: %s: line %d: %s's clock goes back, to %d after %d", f.name, k+1, node, c, last[node])
			}
			last[node] = c
		}
		where[node] = fmt.Sprintf("the last line of %s", f.name)
	}
	return true, nil
}

// byClock is the stream whose next event has the least clock (ties: the
// first stream).
func byClock(streams []*stream) *stream {
	var pick *stream
	for _, s := range streams {
		if s.pos < len(s.events) && (pick == nil || s.events[s.pos].Clock < pick.events[pick.pos].Clock) {
			pick = s
		}
	}
	return pick
}

// pick is the stream to take the next event from: the one furthest
// behind among the readiest, an event whose message is in the bag with its
// content, else with its envelope only, else (every stream waits for a
// message no file sent) any.
func (b *builder) pick(streams []*stream) *stream {
	var pick *stream
	level := -1
	for _, s := range streams {
		if s.pos == len(s.events) {
			continue
		}
		r := b.readiness(&s.events[s.pos])
		if r > level || (r == level && s.progress() < pick.progress()) {
			pick, level = s, r
		}
	}
	return pick
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// bootTime is the nanoseconds of raftd's trace name n<id>-<ns>.ndjson, or 0.
func bootTime(name string) int64 {
	base := strings.TrimSuffix(filepath.Base(name), ".ndjson")
	_, ns, ok := strings.Cut(base, "-")
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// sameCluster reports whether two files' configs describe one cluster.
func sameCluster(a, b *trace.Config) error {
	if a.Profile != b.Profile || a.Servers != b.Servers || !slices.Equal(a.ServerNames(), b.ServerNames()) ||
		a.Bugs != b.Bugs || a.Production != b.Production {
		return fmt.Errorf("another cluster's trace (config %+v, the first file's %+v)", *b, *a)
	}
	return nil
}
