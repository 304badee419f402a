package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
	"github.com/durableraft/durableraft/viz"
)

// mergeDir merges the per-node, per-boot traces in dir (raftd --trace DIR)
// into one run in which every receive follows its send (viz's merge: by
// the files' logical clocks when they have them), and returns it with the
// number of files and how they were merged.
func mergeDir(dir string, tornTail bool) ([]byte, int, string, error) {
	paths, err := tracePaths([]string{dir})
	if err != nil {
		return nil, 0, "", err
	}
	var sources []viz.Source
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, 0, "", err
		}
		defer f.Close()
		sources = append(sources, viz.Source{Name: p, R: f})
	}
	if len(sources) == 1 {
		b, err := io.ReadAll(sources[0].R)
		return b, 1, "merged", err
	}
	var merged bytes.Buffer
	p, err := viz.Build(sources, viz.Options{TornTail: tornTail, Merged: &merged})
	if err != nil {
		return nil, 0, "", err
	}
	how := "merged"
	if p.ByClock {
		how = "merged by logical clock"
	}
	return merged.Bytes(), len(sources), how, nil
}

// checkDir merges dir's traces and checks the merged run against the
// spec. A rejected run's merged trace is kept beside the directory
// (DIR.merged.ndjson) for raftspec viz and TLC.
func checkDir(dir string, tornTail bool, stdout io.Writer) (bool, error) {
	merged, files, how, err := mergeDir(dir, tornTail)
	if err != nil {
		return false, err
	}
	rd := trace.NewReader(bytes.NewReader(merged), trace.ReadOptions{TornTail: tornTail})
	n, err := spec.CheckTraceEvents(rd)
	if err != nil {
		keep := dir + ".merged.ndjson"
		if werr := os.WriteFile(keep, merged, 0o644); werr == nil {
			fmt.Fprintf(stdout, "%s: REJECTED (merged from %d files, kept in %s): %v\n", dir, files, keep, err)
		} else {
			fmt.Fprintf(stdout, "%s: REJECTED (merged from %d files): %v\n", dir, files, err)
		}
		return false, nil
	}
	fmt.Fprintf(stdout, "%s: ok (%d events %s from %d files)\n", dir, n, how, files)
	return true, nil
}
