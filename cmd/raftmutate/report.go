package main

import (
	"fmt"
	"io"
	"strings"
)

// Tally counts outcomes. Killed includes TimedOut; Survived excludes the
// survivors declared equivalent, which Equivalent counts.
type Tally struct {
	Mutants, Killed, TimedOut, Survived, BuildErrors, Equivalent int
}

func (t *Tally) add(o *Outcome) {
	t.Mutants++
	switch o.Status {
	case Killed:
		t.Killed++
	case TimedOut:
		t.Killed++
		t.TimedOut++
	case BuildError:
		t.BuildErrors++
	case Survived:
		if o.Equivalent != "" {
			t.Equivalent++
		} else {
			t.Survived++
		}
	}
}

// Judged is the score's denominator: total − build errors − equivalent.
func (t *Tally) Judged() int { return t.Mutants - t.BuildErrors - t.Equivalent }

// Score is killed / (total − equivalent), build errors not counted; ok is
// false when no mutant was judged.
func (t *Tally) Score() (score float64, ok bool) {
	if t.Judged() == 0 {
		return 0, false
	}
	return float64(t.Killed) / float64(t.Judged()), true
}

func (t *Tally) scoreString() string {
	s, ok := t.Score()
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", floorTo(s, 100))
}

// floorTo rounds s down to 1/per, so that 0.949 never prints as 0.95.
func floorTo(s float64, per float64) float64 {
	return float64(int64(s*per+1e-9)) / per
}

// Result is ok or below-threshold.
func (t *Tally) Result(threshold float64) string {
	if s, ok := t.Score(); ok && s < threshold {
		return "below-threshold"
	}
	return "ok"
}

// Line is the machine-readable summary.
func (t *Tally) Line(threshold float64) string {
	return fmt.Sprintf("mutants=%d killed=%d timeout=%d survived=%d builderror=%d equivalent=%d score=%s result=%s",
		t.Mutants, t.Killed, t.TimedOut, t.Survived, t.BuildErrors, t.Equivalent, t.scoreString(), t.Result(threshold))
}

// PackageResult is one package's run.
type PackageResult struct {
	Dir       string
	Generated int // mutants of the selected operators, before -sample/-only
	Baseline  float64
	Coverage  string // -tests: what the coverage runs found
	Outcomes  []Outcome
	Tally     Tally
}

// RunInfo describes a run for the report's header.
type RunInfo struct {
	Judge     string
	Ops       string
	Selection string // "all", "sample of N (seed S)", "only ..."
	Workers   int
	Timeout   string
	Commit    string
	Threshold float64
	Stale     []string
}

// writeReport writes the markdown report.
func writeReport(w io.Writer, info *RunInfo, pkgs []*PackageResult) {
	var total Tally
	fmt.Fprintf(w, "# Mutation report\n\n")
	fmt.Fprintf(w, "`raftmutate` at commit %s. Operators: %s. Mutants: %s. Judge: `%s` (timeout %s, %d worker(s)).\n\n",
		info.Commit, info.Ops, info.Selection, info.Judge, info.Timeout, info.Workers)
	fmt.Fprintf(w, "| package | generated | run | killed | timeouts | survived | build errors | equivalent | score | baseline |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range pkgs {
		t := &p.Tally
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %d | %s | %.1fs |\n", p.Dir, p.Generated, t.Mutants,
			t.Killed, t.TimedOut, t.Survived, t.BuildErrors, t.Equivalent, t.scoreString(), p.Baseline)
		total.Mutants += t.Mutants
		total.Killed += t.Killed
		total.TimedOut += t.TimedOut
		total.Survived += t.Survived
		total.BuildErrors += t.BuildErrors
		total.Equivalent += t.Equivalent
	}
	fmt.Fprintf(w, "\nMutation score = killed / (run − build errors − equivalent); timeouts count as killed. Threshold %.2f: %s.\n",
		info.Threshold, total.Result(info.Threshold))
	if len(info.Stale) > 0 {
		fmt.Fprintf(w, "\n**Stale equivalence declarations** (no such mutant; the source moved?): %s\n", strings.Join(info.Stale, ", "))
	}
	for _, p := range pkgs {
		writePackage(w, p)
	}
	fmt.Fprintf(w, "\n`%s`\n", total.Line(info.Threshold))
}

func writePackage(w io.Writer, p *PackageResult) {
	fmt.Fprintf(w, "\n## %s\n", p.Dir)
	var secs float64
	for i := range p.Outcomes {
		secs += p.Outcomes[i].Seconds
	}
	if n := len(p.Outcomes); n > 0 {
		fmt.Fprintf(w, "\n%d mutants in %.0fs, %.1fs per mutant; score %s.\n", n, secs, secs/float64(n), p.Tally.scoreString())
	}
	if p.Coverage != "" {
		fmt.Fprintf(w, "\nTest selection by coverage: %s.\n", p.Coverage)
	}
	section := func(title string, pick func(*Outcome) bool, row func(*Outcome) string, header string) {
		var rows []string
		for i := range p.Outcomes {
			if o := &p.Outcomes[i]; pick(o) {
				rows = append(rows, row(o))
			}
		}
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(w, "\n### %s (%d)\n\n%s\n", title, len(rows), header)
		for _, r := range rows {
			fmt.Fprintln(w, r)
		}
	}
	section("Survived", func(o *Outcome) bool { return o.Status == Survived && o.Equivalent == "" },
		func(o *Outcome) string {
			run := fmt.Sprintf("%d tests", o.Tests)
			if o.NotCovered {
				run = "not covered"
			} else if o.Tests == 0 {
				run = "the judge"
			}
			return fmt.Sprintf("| `%s` | %s | `%s` | %s |", o.ID, o.Func, cell(o.Diff()), run)
		},
		"| id | function | change | run |\n|---|---|---|---|")
	section("Declared equivalent", func(o *Outcome) bool { return o.Equivalent != "" },
		func(o *Outcome) string {
			note := cell(o.Equivalent)
			if o.Status != Survived {
				note = "**" + string(o.Status) + " although declared equivalent: remove the declaration** " + note
			}
			return fmt.Sprintf("| `%s` | `%s` | %s |", o.ID, cell(o.Diff()), note)
		},
		"| id | change | argument |\n|---|---|---|")
	section("Timed out", func(o *Outcome) bool { return o.Status == TimedOut },
		func(o *Outcome) string {
			return fmt.Sprintf("| `%s` | `%s` | %.1fs |", o.ID, cell(o.Diff()), o.Seconds)
		},
		"| id | change | time |\n|---|---|---|")
	section("Build errors (not counted)", func(o *Outcome) bool { return o.Status == BuildError },
		func(o *Outcome) string {
			return fmt.Sprintf("| `%s` | `%s` | %s |", o.ID, cell(o.Diff()), cell(strings.Join(o.Tail, " / ")))
		},
		"| id | change | compiler |\n|---|---|---|")
	section("Killed", func(o *Outcome) bool { return o.Status == Killed && o.Equivalent == "" },
		func(o *Outcome) string {
			return fmt.Sprintf("| `%s` | `%s` | %s | %.1fs |", o.ID, cell(o.Diff()), cell(o.By), o.Seconds)
		},
		"| id | change | killed by | time |\n|---|---|---|---|")
}

// cell makes s safe inside a markdown table cell (and a code span).
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "`", "'")
	return oneLine(s)
}
