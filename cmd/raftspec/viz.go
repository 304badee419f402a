package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/durableraft/durableraft/viz"
)

// vizCommand writes the page that draws a run: raftspec viz TRACE > run.html.
// Several files, or a directory, are the per-node, per-boot traces of one
// cluster (raftd --trace DIR), merged.
func vizCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("viz", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: raftspec viz [flags] TRACE... > run.html\n\n"+
			"Draws a trace (version 1 or 2: a counterexample, a simulator walk, an impl/ or raftd trace)\n"+
			"as one self-contained HTML page. Several files, or a directory of them, are the traces of\n"+
			"one cluster's nodes (raftd --trace DIR), merged so that every receive follows its send.")
		fs.PrintDefaults()
	}
	out := fs.String("o", "", "write the page to this file instead of stdout")
	title := fs.String("title", "", "the page's title (default: the file names)")
	check := fs.Bool("check", true, "run the trace checker and mark the first event the spec rejects")
	invariants := fs.Bool("invariants", true, "replay the run through the explorer's model and mark where an invariant breaks")
	tornTail := fs.Bool("torn-tail", false, "drop a torn last line (a writer killed inside it)")
	maxEvents := fs.Int("max-events", viz.DefaultMaxEvents, "refuse a trace of more events (a page is for a browser)")
	mergedPath := fs.String("merged", "", "with several files: also write the merged run as one trace here (for check-trace and TLC)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	paths, err := tracePaths(fs.Args())
	if err != nil {
		return err
	}
	var sources []viz.Source
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sources = append(sources, viz.Source{Name: p, R: f})
	}
	opt := viz.Options{Title: *title, Check: *check, Invariants: *invariants, TornTail: *tornTail, MaxEvents: *maxEvents}
	if *mergedPath != "" {
		if len(sources) < 2 {
			return errors.New("viz: -merged needs several files to merge")
		}
		f, err := os.Create(*mergedPath)
		if err != nil {
			return err
		}
		defer f.Close()
		opt.Merged = f
	}
	page, err := viz.Build(sources, opt)
	if err != nil {
		return err
	}
	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if err := viz.WritePage(w, page); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "raftspec viz: %d events, %d messages (%d receives matched by content, %d by envelope, %d without a send; %d dropped, %d duplicated)%s\n",
		len(page.Events), page.Stats.Messages, page.Stats.Exact, page.Stats.Approx, page.Stats.Unmatched,
		page.Stats.Drops, page.Stats.Dups, verdictNote(page))
	return nil
}

func verdictNote(p *viz.Page) string {
	s := ""
	if c := p.Check; c != nil {
		if c.OK {
			s += "; the spec accepts it"
		} else {
			s += fmt.Sprintf("; the spec rejects event %d", c.Event+1)
		}
	}
	if inv := p.Inv; inv != nil {
		for _, v := range inv.First {
			s += fmt.Sprintf("; %s breaks at event %d", v.Invariant, v.Event+1)
		}
		if inv.Stop != "" {
			s += fmt.Sprintf("; invariants evaluated on %d events: %s", inv.Upto, inv.Stop)
		}
	}
	return s
}

// tracePaths expands directories to their *.ndjson files.
func tracePaths(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New("viz: no trace given (raftspec viz TRACE... > run.html)")
	}
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(filepath.Join(a, "*.ndjson"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("viz: no *.ndjson in %s", a)
		}
		slices.Sort(m)
		out = append(out, m...)
	}
	return out, nil
}

// drawHint is the line explore, simulate and story print under a
// counterexample: the command that draws it.
func drawHint(path string) string {
	html := path[:len(path)-len(filepath.Ext(path))] + ".html"
	return fmt.Sprintf("draw it: raftspec viz %s > %s", path, html)
}
