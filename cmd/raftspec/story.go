package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/durableraft/durableraft/spec"
)

// storyCommand replays a failure story of spec/testdata/stories (the
// format of spec/story.go: a config line, one step per line, an expect
// line) under its bug switches, writes it as a trace, checks that
// it breaks the invariant it expects, and replays it with every fix on,
// where some step must be impossible or the invariant hold at the end.
func storyCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("story", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: raftspec story [-trace OUT.ndjson] [-html OUT.html] STORY.txt\n\n"+
			"Replays a failure story (spec/testdata/stories/*.txt) step by step under its bug switches,\n"+
			"then with every fix on. The last line is\n"+
			"  steps=N result=violation invariant=NAME trace=PATH fixed=blocked|holds")
		fs.PrintDefaults()
	}
	tracePath := fs.String("trace", "", "write the story as a trace here (default: a new file in the temp dir)")
	htmlPath := fs.String("html", "", "also draw it (raftspec viz) into this file")
	quiet := fs.Bool("q", false, "do not print the steps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError(2)
	}
	st, err := spec.ParseStory(fs.Arg(0))
	if err != nil {
		return err
	}
	m, err := spec.NewModel(st.Config)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "raftspec story: %s: %v\n", fs.Arg(0), m.Config)
	steps, err := st.Run(m)
	if !*quiet {
		for k, s := range steps[1:] {
			fmt.Fprintf(stderr, "  %2d: %v\n", k+1, s.Label)
		}
	}
	if err != nil {
		return fmt.Errorf("story: under %v: %w", st.Config.Bugs, err)
	}
	detail, err := st.Broken(m, steps)
	if err != nil {
		return err
	}
	if detail == "" {
		fmt.Fprintf(stderr, "Error: the story ends without breaking %s\n", st.Expect)
		return exitError(1)
	}
	fmt.Fprintf(stderr, "invariant %s is violated: %s\n", st.Expect, detail)
	path := *tracePath
	if path == "" {
		f, err := os.CreateTemp("", "raftspec-story-*.ndjson")
		if err != nil {
			return err
		}
		path = f.Name()
		f.Close()
	}
	if err := m.WriteTraceFile(path, steps); err != nil {
		return err
	}
	fmt.Fprintln(stderr, drawHint(path))
	fixed, ok := storyFixed(st, stderr)
	if *htmlPath != "" {
		if err := vizCommand([]string{"-o", *htmlPath, "-title", filepath.Base(fs.Arg(0)) + ": " + st.Expect + " under " + st.Config.Bugs.String(), path}, io.Discard, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "steps=%d result=violation invariant=%s trace=%s fixed=%s\n", len(steps)-1, st.Expect, path, fixed)
	if !ok {
		return exitError(1)
	}
	return nil
}

// storyFixed replays the story with every fix on and says so: "blocked"
// when a step is impossible, "holds" when it runs to its end without the
// violation (both fine), "broken" or "error" otherwise.
func storyFixed(st *spec.Story, stderr io.Writer) (string, bool) {
	outcome, detail, err := st.Fixed()
	switch {
	case err != nil:
		fmt.Fprintln(stderr, "with every fix on:", err)
		return "error", false
	case outcome == spec.FixedBlocked:
		fmt.Fprintf(stderr, "with every fix on: %s\n", detail)
	case outcome == spec.FixedBroken:
		fmt.Fprintf(stderr, "with every fix on the story still breaks %s: %s\n", st.Expect, detail)
		return string(outcome), false
	default:
		fmt.Fprintf(stderr, "with every fix on: the story runs to its end and %s holds\n", st.Expect)
	}
	return string(outcome), true
}
