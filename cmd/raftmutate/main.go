package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	var exit exitError
	switch {
	case errors.As(err, &exit):
		os.Exit(int(exit))
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "raftmutate:", err)
		os.Exit(2)
	}
}

// exitError is an exit status whose explanation is already printed.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

type options struct {
	root, ops, files, funcs, skipFuncs         string
	asserts, skipCalls                         string
	judge, only, equivalents, report, jsonPath string
	tests, skipTests                           string
	timeout                                    time.Duration
	workers, sampleN, tail                     int
	seed                                       uint64
	threshold                                  float64
	list, noBaseline, buildCheck, rankedOrder  bool
	stopAfter                                  time.Duration
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.root, "C", "", "module root: where packages are named from and commands run (default: the nearest directory with a go.mod)")
	fs.StringVar(&o.ops, "ops", "all", "operators or groups, comma-separated: "+opNames(allOperators)+"; groups spec (the first five), impl, all")
	fs.StringVar(&o.files, "files", "", "comma-separated base-name globs: mutate only these files of each package (default: all)")
	fs.StringVar(&o.funcs, "funcs", "", "regexp: mutate only inside functions whose name (Name, or Type.Name for methods) matches")
	fs.StringVar(&o.skipFuncs, "skip-funcs", "", "regexp: do not mutate inside functions whose name matches")
	fs.StringVar(&o.asserts, "asserts", "assert,failf", "comma-separated assertion helpers (name, or pkg.name): their arguments, and the condition of an if whose body only calls one, are not mutated")
	fs.StringVar(&o.skipCalls, "skip-calls", defaultSkipCalls, "comma-separated functions (name, or pkg.name) whose arguments are not mutated: they only make text")
	fs.StringVar(&o.judge, "judge", "go test -count=1 {pkg}", "shell command judging a mutant (exit 0 = survived); {pkg} is ./<package dir>; runs in the module root with GOFLAGS carrying the overlay")
	fs.StringVar(&o.tests, "tests", "", "package patterns, space-separated ({pkg} is ./<package dir>): judge by their tests, selected per mutant by coverage (replaces -judge; docs/mutation.md)")
	fs.StringVar(&o.skipTests, "skip-tests", "", "with -tests: regexp on DIR.TestName (DIR module-relative, e.g. conformance/proc.TestX): tests never run, neither for coverage nor as a judge")
	fs.DurationVar(&o.timeout, "timeout", 0, "per-mutant timeout (0: 3 × the baseline run + 30s; with -tests, 3 × the covering tests' time + 30s per test run, confirmed by a rerun at 10 × + 120s)")
	fs.IntVar(&o.workers, "workers", 1, "mutants judged in parallel")
	fs.IntVar(&o.sampleN, "sample", 0, "judge a deterministic sample of N mutants per package (0: all)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of -sample")
	fs.BoolVar(&o.rankedOrder, "ranked", false, "judge in the order of -seed's hash (the order -sample takes mutants in): a run stopped after k mutants has judged the sample of k")
	fs.DurationVar(&o.stopAfter, "stop-after", 0, "stop starting mutants this long after the start (finishing those started) and report what was judged (0: never)")
	fs.StringVar(&o.only, "only", "", "judge only these mutants: comma-separated ids, or @FILE with one id a line")
	fs.StringVar(&o.equivalents, "equivalents", "", "file of mutants declared equivalent: 'ID argument' a line")
	fs.Float64Var(&o.threshold, "threshold", 0.95, "minimum mutation score; below it result=below-threshold and exit status 1")
	fs.StringVar(&o.report, "report", "", "write the markdown report to this file")
	fs.StringVar(&o.jsonPath, "json", "", "write every outcome as JSON to this file")
	fs.IntVar(&o.tail, "tail", 5, "judge output lines kept per killed mutant")
	fs.BoolVar(&o.list, "list", false, "list the selected mutants (id and change) and exit without judging")
	fs.BoolVar(&o.noBaseline, "no-baseline", false, "skip the run of the judge on the unchanged package")
	fs.BoolVar(&o.buildCheck, "build-check", true, "compile each mutant (go build) before judging it, to tell build errors apart")
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("raftmutate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: raftmutate [flags] PACKAGE-DIR...\n\n")
		fs.PrintDefaults()
	}
	var o options
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitError(2)
	}
	if o.sampleN > 0 && o.only != "" {
		return errors.New("-sample and -only exclude each other")
	}
	if o.workers < 1 {
		return errors.New("-workers must be at least 1")
	}
	cfg, err := o.genConfig()
	if err != nil {
		return err
	}
	root, err := moduleRoot(o.root)
	if err != nil {
		return err
	}
	var pkgs []*Package
	for _, dir := range fs.Args() {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		p, err := generatePackage(root, dir, cfg)
		if err != nil {
			return err
		}
		pkgs = append(pkgs, p)
	}
	eq, err := loadEquivalents(o.equivalents)
	if err != nil {
		return err
	}
	stale, err := checkEquivalents(pkgs, eq)
	if err != nil {
		return err
	}
	for _, id := range stale {
		fmt.Fprintf(stderr, "raftmutate: warning: %s: declared equivalent, but no such mutant (stale?)\n", id)
	}
	selected, selection, err := o.selectMutants(pkgs)
	if err != nil {
		return err
	}
	if o.list {
		for _, p := range pkgs {
			for _, m := range selected[p.Dir] {
				fmt.Fprintf(stdout, "%s\t%s\n", m.ID, m.Diff())
			}
		}
		return nil
	}
	return o.judgeAll(root, pkgs, selected, eq, &RunInfo{Ops: cfg.ops.String(), Selection: selection,
		Workers: o.workers, Threshold: o.threshold, Stale: stale}, stdout, stderr)
}

func (o *options) genConfig() (*genConfig, error) {
	ops, err := parseOps(o.ops)
	if err != nil {
		return nil, err
	}
	cfg := &genConfig{ops: ops, asserts: nameSet(o.asserts), skipCalls: nameSet(o.skipCalls)}
	for _, g := range strings.Split(o.files, ",") {
		if g = strings.TrimSpace(g); g != "" {
			if _, err := filepath.Match(g, ""); err != nil {
				return nil, fmt.Errorf("-files %q: %w", g, err)
			}
			cfg.files = append(cfg.files, g)
		}
	}
	if o.funcs != "" {
		if cfg.funcs, err = regexp.Compile(o.funcs); err != nil {
			return nil, fmt.Errorf("-funcs: %w", err)
		}
	}
	if o.skipFuncs != "" {
		if cfg.skipFuncs, err = regexp.Compile(o.skipFuncs); err != nil {
			return nil, fmt.Errorf("-skip-funcs: %w", err)
		}
	}
	return cfg, nil
}

// defaultSkipCalls are the formatting functions: a mutant in their
// arguments changes the wording of a message or an error, which no check of
// the protocol can or should pin down.
const defaultSkipCalls = "fmt.Errorf,fmt.Sprintf,fmt.Sprint,fmt.Sprintln,fmt.Fprintf,fmt.Fprint,fmt.Fprintln,fmt.Printf,fmt.Print,fmt.Println,errors.New"

func nameSet(list string) map[string]bool {
	set := map[string]bool{}
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			set[a] = true
		}
	}
	return set
}

// selectMutants applies -only or -sample to each package.
func (o *options) selectMutants(pkgs []*Package) (map[string][]Mutant, string, error) {
	selected := map[string][]Mutant{}
	ids, err := parseOnly(o.only)
	if err != nil {
		return nil, "", err
	}
	var all []Mutant
	for _, p := range pkgs {
		all = append(all, p.Mutants...)
	}
	switch {
	case o.only != "":
		chosen, missing := only(all, ids)
		if len(missing) > 0 {
			return nil, "", fmt.Errorf("-only: no such mutant: %s", strings.Join(missing, ", "))
		}
		for _, m := range chosen {
			selected[m.Pkg] = append(selected[m.Pkg], m)
		}
		return selected, fmt.Sprintf("%d chosen with -only", len(chosen)), nil
	case o.rankedOrder:
		for _, p := range pkgs {
			ms := ranked(p.Mutants, o.seed)
			if o.sampleN > 0 && o.sampleN < len(ms) {
				ms = ms[:o.sampleN]
			}
			selected[p.Dir] = ms
		}
		if o.sampleN > 0 {
			return selected, fmt.Sprintf("a sample of at most %d per package (-seed %d), judged in rank order (-ranked)", o.sampleN, o.seed), nil
		}
		return selected, fmt.Sprintf("all, judged in the rank order of -seed %d (-ranked)", o.seed), nil
	case o.sampleN > 0:
		for _, p := range pkgs {
			selected[p.Dir] = sample(p.Mutants, o.sampleN, o.seed)
		}
		return selected, fmt.Sprintf("a sample of at most %d per package (-seed %d)", o.sampleN, o.seed), nil
	}
	for _, p := range pkgs {
		selected[p.Dir] = p.Mutants
	}
	return selected, "all", nil
}

// judgeAll runs the baselines and the mutants, and reports.
func (o *options) judgeAll(root string, pkgs []*Package, selected map[string][]Mutant, eq map[string]string,
	info *RunInfo, stdout, stderr io.Writer) error {
	tmp, err := os.MkdirTemp("", "raftmutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if strings.ContainsAny(tmp, " \t") {
		return fmt.Errorf("temporary directory %q contains white space, which GOFLAGS cannot carry; set TMPDIR", tmp)
	}
	r := &runner{root: root, judge: o.judge, timeout: o.timeout, tail: o.tail, buildCheck: o.buildCheck,
		tmp: tmp, goFlags: os.Getenv("GOFLAGS"), log: stderr, fixedTimeout: o.timeout != 0}
	if o.stopAfter > 0 {
		r.stopAt = time.Now().Add(o.stopAfter)
	}
	info.Judge, info.Commit = o.judge, gitCommit(root)
	if o.tests != "" {
		if r.modPath, err = modulePath(root); err != nil {
			return err
		}
		info.Judge = "the tests of " + o.tests + ", selected per mutant by coverage"
		if o.skipTests != "" {
			if r.skipTests, err = regexp.Compile(o.skipTests); err != nil {
				return fmt.Errorf("-skip-tests: %w", err)
			}
			info.Judge += ", except " + o.skipTests
		}
	}
	var results []*PackageResult
	var total Tally
	for _, p := range pkgs {
		pr := &PackageResult{Dir: p.Dir, Generated: len(p.Mutants)}
		ms := selected[p.Dir]
		if len(ms) == 0 {
			results = append(results, pr)
			continue
		}
		if o.tests != "" {
			if err := o.coverage(r, p, ms, pr, info); err != nil {
				return err
			}
		} else if !o.noBaseline {
			base, err := r.baseline(p.Dir)
			if err != nil {
				return err
			}
			pr.Baseline = base.Seconds()
			fmt.Fprintf(stderr, "raftmutate: %s: baseline passes in %.1fs; %d of %d mutants to judge\n", p.Dir, pr.Baseline, len(ms), len(p.Mutants))
			if o.timeout == 0 {
				r.timeout = 3*base + 30*time.Second
			}
		} else if o.timeout == 0 {
			r.timeout = 10 * time.Minute
		}
		if o.tests == "" {
			info.Timeout = r.timeout.Round(time.Second).String()
		}
		outs, err := r.runAll(ms, o.workers)
		if len(outs) < len(ms) {
			info.Selection += fmt.Sprintf("; stopped by -stop-after %v: %s judged %d of the %d selected", o.stopAfter, p.Dir, len(outs), len(ms))
			fmt.Fprintf(stderr, "raftmutate: %s: -stop-after: %d of %d mutants judged\n", p.Dir, len(outs), len(ms))
		}
		if err != nil {
			return err
		}
		for i := range outs {
			outs[i].Equivalent = eq[outs[i].ID]
			if outs[i].Equivalent != "" && outs[i].Status != Survived {
				fmt.Fprintf(stderr, "raftmutate: warning: %s is declared equivalent but was %s (%s)\n", outs[i].ID, outs[i].Status, outs[i].By)
			}
			pr.Tally.add(&outs[i])
			total.add(&outs[i])
		}
		pr.Outcomes = outs
		results = append(results, pr)
		fmt.Fprintf(stdout, "package=%s %s\n", p.Dir, pr.Tally.Line(o.threshold))
	}
	if err := o.writeOutputs(info, results); err != nil {
		return err
	}
	fmt.Fprintln(stdout, total.Line(o.threshold))
	if total.Result(o.threshold) != "ok" {
		return exitError(1)
	}
	return nil
}

func (o *options) writeOutputs(info *RunInfo, results []*PackageResult) error {
	if o.report != "" {
		var b bytes.Buffer
		writeReport(&b, info, results)
		if err := os.WriteFile(o.report, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if o.jsonPath != "" {
		var all []Outcome
		for _, p := range results {
			all = append(all, p.Outcomes...)
		}
		js, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonPath, append(js, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// coverage runs -tests' coverage of package p, which becomes the judge of
// its mutants.
func (o *options) coverage(r *runner, p *Package, ms []Mutant, pr *PackageResult, info *RunInfo) error {
	patterns := strings.Fields(strings.ReplaceAll(o.tests, "{pkg}", "./"+p.Dir))
	cs, took, err := r.measureCoverage(p.Dir, patterns)
	if err != nil {
		return err
	}
	r.cover = cs
	pr.Baseline = took.Seconds()
	uncovered := 0
	for i := range ms {
		if ts, known := cs.covering(&ms[i]); known && len(ts) == 0 {
			uncovered++
		}
	}
	pr.Coverage = fmt.Sprintf("%d tests in %d packages, run one at a time with coverage in %.0fs; %d of the %d mutants to judge are in blocks no test runs",
		len(cs.tests), len(cs.pkgs), took.Seconds(), uncovered, len(ms))
	fmt.Fprintf(r.log, "raftmutate: %s: coverage: %s\n", p.Dir, pr.Coverage)
	info.Timeout = "3 × the covering tests' time + 30s per test run, confirmed at 10 × + 120s"
	if o.timeout != 0 {
		info.Timeout = o.timeout.String() + " per test package"
	}
	return nil
}

// modulePath reads the module path from root's go.mod.
func modulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`), nil
		}
	}
	return "", fmt.Errorf("%s/go.mod names no module", root)
}

// moduleRoot is dir, or the nearest directory at or above the working
// directory holding a go.mod.
func moduleRoot(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod at or above %s; use -C", wd)
		}
	}
}

// gitCommit names the commit the module root is at, for the report.
func gitCommit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "(unknown)"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}
