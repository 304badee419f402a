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
// run could have had, not necessarily the one it had: the files carry no
// clock (issue 15 adds one).
func buildMerged(sources []Source, opt Options) (*Page, error) {
	init, version, files, err := readFiles(sources, opt)
	if err != nil {
		return nil, err
	}
	streams, names := nodeStreams(files)
	b, err := newBuilder(init, names, opt)
	if err != nil {
		return nil, err
	}
	b.page.Version, b.page.Merged = version, true
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
		s := b.pick(streams)
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
	b.page.Notes = append(b.page.Notes, fmt.Sprintf("merged from %d files of %d nodes: every receive after its send; the files carry no clock, so this is one order the run could have had", len(files), len(streams)))
	return b.finish(), nil
}

// traceFile is one file of a merge: its steps (after Init), the node that
// takes them, and its boot time.
type traceFile struct {
	name   string
	events []trace.Event
	node   string
	boot   int64
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
		f := &traceFile{name: src.Name, events: evs[1:], boot: bootTime(src.Name)}
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
