package rafttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/trace"
)

// Scenario scripts (impl/raft/testdata/*.txt, etcd-io/raft's
// interaction-test format): a command line, "----", the output it must
// print, a blank line. Lines starting with # are comments, kept when a
// script is rewritten.

// ScriptCase is one command of a script and the output it must print.
type ScriptCase struct {
	Line     int // of the command, 1-based
	Cmd      string
	Expected string
	comment  string // the comment block before the command
}

// ParseScript reads a scenario script.
func ParseScript(path string) ([]ScriptCase, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	var cases []ScriptCase
	var pending []string
	for k := 0; k < len(lines); k++ {
		l := lines[k]
		if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
			pending = append(pending, l)
			continue
		}
		c := ScriptCase{Line: k + 1, Cmd: strings.TrimSpace(l), comment: strings.Join(pending, "\n")}
		pending = nil
		if k+1 >= len(lines) || lines[k+1] != "----" {
			return nil, fmt.Errorf("%s:%d: command without ----", path, k+1)
		}
		k += 2
		var out []string
		for ; k < len(lines) && lines[k] != ""; k++ {
			out = append(out, lines[k])
		}
		c.Expected = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	return cases, nil
}

// ScriptOptions say how a script runs.
type ScriptOptions struct {
	// Bugs are added to every cluster the script creates.
	Bugs raft.Bug
	// CheckTrace, when set, replays the trace at every check command and at
	// the end of the script (conformance/ sets spec.CheckTrace; impl/ never
	// imports spec/). Its verdict is not printed, so a script's expected
	// output is the same with and without a checker: a rejection is
	// reported in ScriptResult.TraceErr.
	CheckTrace func([]trace.Event) error
	// Rewrite writes what each command printed back into the script as its
	// expected output.
	Rewrite bool
}

// ScriptResult is what running a script found.
type ScriptResult struct {
	Mismatches []string // commands whose output differs from the script's
	Violations []string // cluster invariants broken
	// TraceErr is the checker's first rejection (nil: none, or no checker).
	TraceErr error
	Events   int
	Cluster  *Cluster // the last cluster the script created, or nil
}

// RunScript runs a scenario script from a fresh Env (seed 1).
func RunScript(path string, o ScriptOptions) (ScriptResult, error) {
	cases, err := ParseScript(path)
	if err != nil {
		return ScriptResult{}, err
	}
	env := &Env{Bugs: o.Bugs, Seed: 1, CheckTrace: o.CheckTrace}
	var res ScriptResult
	var outs []string
	for _, c := range cases {
		got, err := env.Handle(c.Cmd)
		if err != nil {
			got = "error: " + err.Error()
		}
		outs = append(outs, got)
		if got != c.Expected {
			res.Mismatches = append(res.Mismatches, fmt.Sprintf("%s:%d: %s\n--- want\n%s\n--- got\n%s",
				filepath.Base(path), c.Line, c.Cmd, c.Expected, got))
		}
	}
	if env.C != nil {
		res.Cluster = env.C
		res.Violations = env.C.Violations
		res.Events = len(env.C.Events)
		if env.TraceErr == nil && o.CheckTrace != nil {
			if err := o.CheckTrace(env.C.Events); err != nil {
				env.TraceErr = fmt.Errorf("the whole trace: %w", err)
			}
		}
	}
	res.TraceErr = env.TraceErr
	if o.Rewrite {
		var b strings.Builder
		for k, c := range cases {
			if c.comment != "" {
				b.WriteString(c.comment + "\n")
			}
			fmt.Fprintf(&b, "%s\n----\n%s\n\n", c.Cmd, outs[k])
		}
		if err := os.WriteFile(path, []byte(strings.TrimRight(b.String(), "\n")+"\n"), 0o644); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Scripts lists the scenario scripts of a testdata directory.
func Scripts(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err == nil && len(paths) == 0 {
		err = fmt.Errorf("rafttest: no scenario scripts in %s", dir)
	}
	return paths, err
}
