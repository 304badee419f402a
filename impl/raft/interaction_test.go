package raft_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/raft/rafttest"
	"github.com/durableraft/durableraft/spec"
)

// The scenario scripts of testdata/*.txt (etcd-io/raft's interaction-test
// format): a command line, "----", the output it must print, a blank line.
// Lines starting with # are comments. Run with -rewrite to regenerate the
// expected outputs, then read the diff before committing it.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the scenario scripts")

type scriptCase struct {
	line     int
	cmd      string
	expected string
}

func parseScript(t *testing.T, path string) ([]scriptCase, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var cases []scriptCase
	var comments []string // comment block before each case, to write back
	var pending []string
	for k := 0; k < len(lines); k++ {
		l := lines[k]
		switch {
		case strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "":
			pending = append(pending, l)
			continue
		}
		c := scriptCase{line: k + 1, cmd: strings.TrimSpace(l)}
		if k+1 >= len(lines) || lines[k+1] != "----" {
			t.Fatalf("%s:%d: command without ----", path, k+1)
		}
		k += 2
		var out []string
		for ; k < len(lines) && lines[k] != ""; k++ {
			out = append(out, lines[k])
		}
		c.expected = strings.Join(out, "\n")
		cases = append(cases, c)
		comments = append(comments, strings.Join(pending, "\n"))
		pending = nil
	}
	return cases, comments
}

// scriptResult is what running a script found.
type scriptResult struct {
	mismatches []string
	violations []string
	traceErr   error
	events     int
	cluster    *rafttest.Cluster
}

func runScript(t *testing.T, path string, bugs raft.Bug, rewriteOut bool) scriptResult {
	t.Helper()
	cases, comments := parseScript(t, path)
	env := &rafttest.Env{Bugs: bugs, Seed: 1}
	var res scriptResult
	var outs []string
	for _, c := range cases {
		got, err := env.Handle(c.cmd)
		if err != nil {
			got = "error: " + err.Error()
		}
		outs = append(outs, got)
		if got != c.expected {
			res.mismatches = append(res.mismatches, fmt.Sprintf("%s:%d: %s\n--- want\n%s\n--- got\n%s", filepath.Base(path), c.line, c.cmd, c.expected, got))
		}
	}
	if env.C != nil {
		res.cluster = env.C
		res.violations = env.C.Violations
		res.events = len(env.C.Events)
		res.traceErr = spec.CheckTrace(env.C.Events)
	}
	if rewriteOut {
		var b strings.Builder
		for k, c := range cases {
			if comments[k] != "" {
				b.WriteString(comments[k] + "\n")
			}
			fmt.Fprintf(&b, "%s\n----\n%s\n\n", c.cmd, outs[k])
		}
		if err := os.WriteFile(path, []byte(strings.TrimRight(b.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

func scripts(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenario scripts: %v", err)
	}
	return paths
}

// TestScenarios runs every script: its output must match, the cluster
// invariants must hold throughout, and spec.CheckTrace must accept its
// trace.
func TestScenarios(t *testing.T) {
	for _, path := range scripts(t) {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			res := runScript(t, path, 0, *rewrite)
			for _, m := range res.mismatches {
				if !*rewrite {
					t.Error(m)
				}
			}
			for _, v := range res.violations {
				t.Errorf("invariant violated: %s", v)
			}
			if res.traceErr != nil {
				t.Errorf("spec.CheckTrace rejects the trace (%d events): %v", res.events, res.traceErr)
			}
		})
	}
}
