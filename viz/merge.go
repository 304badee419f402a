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
	type file struct {
		name   string
		events []trace.Event // after Init
		node   string
		boot   int64
	}
	var files []*file
	var init *trace.Event
	version := 0
	for _, src := range sources {
		evs, err := trace.DecodeOptions(src.R, trace.ReadOptions{TornTail: opt.TornTail})
		if err != nil {
			return nil, fmt.Errorf("viz: %s: %w", src.Name, err)
		}
		if init == nil {
			init, version = &evs[0], evs[0].V
		} else if err := sameCluster(init.Config, evs[0].Config); err != nil {
			return nil, fmt.Errorf("viz: %s: %w", src.Name, err)
		}
		f := &file{name: src.Name, events: evs[1:], boot: bootTime(src.Name)}
		for _, e := range f.events {
			if e.Node == "" {
				continue
			}
			if f.node == "" {
				f.node = e.Node
			} else if e.Node != f.node && e.Action != "DropMessage" && e.Action != "DuplicateMessage" {
				return nil, fmt.Errorf("viz: %s holds steps of %s and %s: give one trace of a whole run, or one file per node", src.Name, f.node, e.Node)
			}
		}
		files = append(files, f)
	}
	// One stream per node: its files in boot order.
	type stream struct {
		node   string
		files  []*file
		events []trace.Event
		file   []int // file[k]: the index in names of events[k]'s file
		pos    int
	}
	var names []string
	byNode := map[string]*stream{}
	var streams []*stream
	slices.SortStableFunc(files, func(a, b *file) int {
		if a.boot != b.boot {
			return cmpInt64(a.boot, b.boot)
		}
		return strings.Compare(a.name, b.name)
	})
	for _, f := range files {
		s := byNode[f.node]
		if s == nil {
			s = &stream{node: f.node}
			byNode[f.node] = s
			streams = append(streams, s)
		}
		names = append(names, f.name)
		for _, e := range f.events {
			s.events = append(s.events, e)
			s.file = append(s.file, len(names)-1)
		}
	}
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
	// progress is how far a stream is through its own events.
	progress := func(s *stream) float64 { return float64(s.pos) / float64(len(s.events)) }
	for n := 0; n < total; n++ {
		// The stream furthest behind among the readiest: an event whose
		// message is in the bag with its content, else with its envelope
		// only, else (every stream waits for a message no file sent) any.
		var pick *stream
		level := -1
		for _, s := range streams {
			if s.pos == len(s.events) {
				continue
			}
			r := b.readiness(&s.events[s.pos])
			if r > level || (r == level && progress(s) < progress(pick)) {
				pick, level = s, r
			}
		}
		b.add(&pick.events[pick.pos], pick.file[pick.pos])
		if out != nil {
			out.Write(pick.events[pick.pos])
		}
		pick.pos++
	}
	if out != nil {
		if err := out.Flush(); err != nil {
			return nil, fmt.Errorf("viz: write the merged trace: %w", err)
		}
	}
	b.page.Notes = append(b.page.Notes, fmt.Sprintf("merged from %d files of %d nodes: every receive after its send; the files carry no clock, so this is one order the run could have had", len(files), len(streams)))
	return b.finish(), nil
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
