package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Test selection by coverage (-tests). Instead of a shell judge, the tool
// runs the tests of the -tests packages itself: once on the unchanged
// source, one top-level test at a time with coverage of the mutated
// package, to learn which tests reach which block; then, for each mutant,
// only the tests whose run reached the mutant's block. A mutant in a block
// no test reached is a survivor without a run (after a build check). A
// test the selection leaves out never executed the mutated code on the
// unchanged source, so it could only see the mutant by another schedule
// (timing) or through a process whose coverage is lost (killed before it
// exits); such a survivor is rerun with the whole judge (docs/mutation.md).

// testPkg is one package of -tests that has tests.
type testPkg struct {
	Import, Dir string
	own         bool // the mutated package's own tests
}

// testCase is one top-level test (Test, Fuzz or Example function).
type testCase struct {
	pkg     *testPkg
	Name    string
	Seconds float64 // its run with coverage on the unchanged source
}

// coverBlock is one block of a coverage profile and the tests that ran it.
type coverBlock struct {
	sl, sc, el, ec int
	tests          map[int]bool // indexes into coverSet.tests
}

func (b *coverBlock) contains(line, col int) bool {
	if line < b.sl || line > b.el {
		return false
	}
	if line == b.sl && col < b.sc {
		return false
	}
	return line != b.el || col < b.ec
}

// coverSet is what the coverage runs learned about one mutated package.
type coverSet struct {
	pkgs   []*testPkg
	tests  []*testCase
	blocks map[string][]*coverBlock // by module-relative file
	byPos  map[blockKey]*coverBlock
}

type blockKey struct {
	file           string
	sl, sc, el, ec int
}

// covering returns the tests that ran the block holding the mutant's
// anchor; known is false when no block holds it (then every test is the
// selection).
func (c *coverSet) covering(m *Mutant) (tests []*testCase, known bool) {
	var best *coverBlock
	for _, b := range c.blocks[m.File] {
		if !b.contains(m.anchorLine, m.anchorCol) {
			continue
		}
		// The innermost block: a function literal's blocks lie inside the
		// block of the statement that holds the literal.
		if best == nil || b.sl > best.sl || (b.sl == best.sl && b.sc > best.sc) {
			best = b
		}
	}
	if best == nil {
		return c.tests, false
	}
	for i, t := range c.tests {
		if best.tests[i] {
			tests = append(tests, t)
		}
	}
	return tests, true
}

// addProfile merges a coverage profile (go test -coverprofile or go tool
// covdata textfmt) into the set as test i's: every block with a count > 0
// is marked as run by it. Files outside the module prefix are ignored.
func (c *coverSet) addProfile(r io.Reader, modPath string, i int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "mode:") {
			continue
		}
		b, file, count, err := parseProfileLine(line)
		if err != nil {
			return err
		}
		rel, ok := strings.CutPrefix(file, modPath+"/")
		if !ok {
			continue
		}
		blk := c.block(rel, b)
		if count > 0 {
			blk.tests[i] = true
		}
	}
	return sc.Err()
}

// block finds or adds the block of file with b's position.
func (c *coverSet) block(file string, b coverBlock) *coverBlock {
	if c.blocks == nil {
		c.blocks, c.byPos = map[string][]*coverBlock{}, map[blockKey]*coverBlock{}
	}
	k := blockKey{file, b.sl, b.sc, b.el, b.ec}
	if x := c.byPos[k]; x != nil {
		return x
	}
	nb := &coverBlock{sl: b.sl, sc: b.sc, el: b.el, ec: b.ec, tests: map[int]bool{}}
	c.blocks[file] = append(c.blocks[file], nb)
	c.byPos[k] = nb
	return nb
}

// parseProfileLine parses "file:sl.sc,el.ec stmts count".
func parseProfileLine(line string) (b coverBlock, file string, count int, err error) {
	bad := fmt.Errorf("coverage profile: bad line %q", line)
	colon := strings.LastIndexByte(line, ':')
	if colon < 0 {
		return b, "", 0, bad
	}
	file = line[:colon]
	f := strings.Fields(line[colon+1:])
	if len(f) != 3 {
		return b, "", 0, bad
	}
	if _, err := fmt.Sscanf(f[0], "%d.%d,%d.%d", &b.sl, &b.sc, &b.el, &b.ec); err != nil {
		return b, "", 0, bad
	}
	if count, err = strconv.Atoi(f[2]); err != nil {
		return b, "", 0, bad
	}
	return b, file, count, nil
}

// testPackages lists the packages of patterns that have tests.
func (r *runner) testPackages(patterns []string, mutated string) ([]*testPkg, error) {
	argv := append([]string{"go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}\t{{len .XTestGoFiles}}"}, patterns...)
	res, err := r.command([]string{r.goFlagsEnv("")}, 0, argv...)
	if err != nil {
		return nil, err
	}
	if res.exit != 0 {
		return nil, fmt.Errorf("go list %s: %s", strings.Join(patterns, " "), strings.Join(res.out.lines(10), "\n"))
	}
	var pkgs []*testPkg
	for _, l := range res.out.lines(keepLines) {
		f := strings.Split(l, "\t")
		if len(f) != 4 || (f[2] == "0" && f[3] == "0") {
			continue
		}
		pkgs = append(pkgs, &testPkg{Import: f[0], Dir: f[1], own: f[0] == mutated})
	}
	// The mutated package's own tests first: they are the likeliest to
	// kill, and cheapest.
	sort.SliceStable(pkgs, func(i, j int) bool { return pkgs[i].own && !pkgs[j].own })
	return pkgs, nil
}

// measureCoverage builds each test package with coverage of the mutated
// package and runs its tests one at a time on the unchanged source. Every
// test must pass. Subprocesses that the tests build with the go command
// (GOFLAGS -cover) write their coverage to GOCOVERDIR, which is merged.
func (r *runner) measureCoverage(pkgDir string, patterns []string) (*coverSet, time.Duration, error) {
	start := time.Now()
	mutated := r.modPath + "/" + pkgDir
	if pkgDir == "." {
		mutated = r.modPath
	}
	pkgs, err := r.testPackages(patterns, mutated)
	if err != nil {
		return nil, 0, err
	}
	dir := filepath.Join(r.tmp, "coverage")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	cs := &coverSet{pkgs: pkgs}
	coverFlags := "-cover -covermode=set -coverpkg=" + mutated
	for pi, p := range pkgs {
		bin := filepath.Join(dir, fmt.Sprintf("p%d.test", pi))
		res, err := r.command([]string{r.goFlagsEnv("")}, 0, "go", "test", "-c", "-o", bin,
			"-cover", "-covermode=set", "-coverpkg="+mutated, p.Import)
		if err != nil {
			return nil, 0, err
		}
		if res.exit != 0 {
			return nil, 0, fmt.Errorf("building %s with coverage: %s", p.Import, strings.Join(res.out.lines(10), "\n"))
		}
		names, err := r.listTests(bin, p.Dir)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", p.Import, err)
		}
		for _, name := range names {
			if r.skipTests != nil && r.skipTests.MatchString(r.relPkg(p.Import)+"."+name) {
				continue
			}
			tc := &testCase{pkg: p, Name: name}
			i := len(cs.tests)
			cs.tests = append(cs.tests, tc)
			if err := r.coverTest(cs, tc, i, bin, filepath.Join(dir, fmt.Sprintf("t%d", i)), coverFlags); err != nil {
				return nil, 0, err
			}
		}
		_ = os.Remove(bin)
	}
	return cs, time.Since(start), nil
}

// relPkg is an import path relative to the module ("." for its root).
func (r *runner) relPkg(imp string) string {
	if imp == r.modPath {
		return "."
	}
	return strings.TrimPrefix(imp, r.modPath+"/")
}

// listTests lists a test binary's Test, Fuzz and Example functions.
func (r *runner) listTests(bin, dir string) ([]string, error) {
	res, err := r.commandIn(dir, nil, 0, bin, "-test.list", ".*")
	if err != nil {
		return nil, err
	}
	if res.exit != 0 {
		return nil, fmt.Errorf("-test.list: %s", strings.Join(res.out.lines(10), "\n"))
	}
	var names []string
	for _, l := range res.out.lines(keepLines * 10) {
		if strings.HasPrefix(l, "Test") || strings.HasPrefix(l, "Fuzz") || strings.HasPrefix(l, "Example") {
			names = append(names, strings.TrimSpace(l))
		}
	}
	return names, nil
}

// coverTest runs test i alone with coverage and merges what it ran. A
// failing test is run once more before the run gives up (a wall-clock wait
// under load).
func (r *runner) coverTest(cs *coverSet, tc *testCase, i int, bin, work, coverFlags string) error {
	var res *cmdResult
	for attempt := 0; attempt < 2; attempt++ {
		if err := os.RemoveAll(work); err != nil {
			return err
		}
		gocov := filepath.Join(work, "gocov")
		if err := os.MkdirAll(gocov, 0o755); err != nil {
			return err
		}
		env := []string{"GOFLAGS=" + strings.TrimSpace(r.goFlags+" -vet=off "+coverFlags), "GOCOVERDIR=" + gocov,
			"RAFTMUTATE_ID=baseline", "RAFTMUTATE_DIR=" + work, "RAFTMUTATE_OVERLAY="}
		var err error
		res, err = r.commandIn(tc.pkg.Dir, env, 0, bin, "-test.run", "^"+tc.Name+"$", "-test.count=1",
			"-test.coverprofile="+filepath.Join(work, "profile"))
		if err != nil {
			return err
		}
		if res.exit == 0 {
			break
		}
	}
	if res.exit != 0 {
		return fmt.Errorf("the test %s of %s fails on the unchanged source (twice; fix that first):\n  %s",
			tc.Name, tc.pkg.Import, strings.Join(res.out.lines(r.tail+10), "\n  "))
	}
	tc.Seconds = res.elapsed.Seconds()
	if err := r.mergeProfile(cs, filepath.Join(work, "profile"), i); err != nil {
		return err
	}
	gocov := filepath.Join(work, "gocov")
	if ents, _ := os.ReadDir(gocov); len(ents) > 0 {
		text := filepath.Join(work, "gocov.txt")
		res, err := r.command(nil, 0, "go", "tool", "covdata", "textfmt", "-i="+gocov, "-o="+text)
		if err != nil {
			return err
		}
		if res.exit != 0 {
			return fmt.Errorf("go tool covdata: %s", strings.Join(res.out.lines(5), "\n"))
		}
		if err := r.mergeProfile(cs, text, i); err != nil {
			return err
		}
	}
	fmt.Fprintf(r.log, "raftmutate: coverage: %s %s %.1fs\n", tc.pkg.Import, tc.Name, tc.Seconds)
	return os.RemoveAll(work)
}

func (r *runner) mergeProfile(cs *coverSet, path string, i int) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return cs.addProfile(f, r.modPath, i)
}

// runSelected judges m by the tests that cover it: for each test package
// with covering tests (the mutated package's own first), build its test
// binary with the overlay and run those tests, stopping at the first
// failure. A build failure makes the mutant not viable (build-error, not
// counted); a failing test kills it; a run past 3 × the covering tests'
// measured time + 30 s, and again past 10 × + 120 s (or once past
// -timeout), is a timeout.
func (r *runner) runSelected(m *Mutant, o *Outcome, dir, scratch, overlay string) error {
	tests, known := r.cover.covering(m)
	o.Tests = len(tests)
	env := []string{r.goFlagsEnv(overlay), "RAFTMUTATE_ID=" + m.ID, "RAFTMUTATE_DIR=" + scratch, "RAFTMUTATE_OVERLAY=" + overlay}
	if known && len(tests) == 0 {
		res, err := r.command(nil, buildTimeout, "go", "build", "-o", os.DevNull, "-overlay="+overlay, "./"+m.Pkg)
		if err != nil {
			return err
		}
		if res.timedOut || res.exit != 0 {
			o.Status, o.Tail = BuildError, res.out.lines(r.tail)
			return nil
		}
		o.Status, o.NotCovered = Survived, true
		return nil
	}
	// The mutated package's own tests first, on a build of their own: most
	// kills come from them. The other packages' test binaries are then built
	// by one go test -c, which builds them in parallel and shares compiles.
	byPkg := map[*testPkg][]*testCase{}
	for _, t := range tests {
		byPkg[t.pkg] = append(byPkg[t.pkg], t)
	}
	var own, rest []*testPkg
	for _, p := range r.cover.pkgs {
		switch {
		case len(byPkg[p]) == 0:
		case p.own:
			own = append(own, p)
		default:
			rest = append(rest, p)
		}
	}
	for _, batch := range [][]*testPkg{own, rest} {
		if len(batch) == 0 {
			continue
		}
		bins, ok, err := r.buildTests(o, m, batch, dir, env)
		if !ok || err != nil {
			return err
		}
		for i, p := range batch {
			for _, group := range cheapFirst(byPkg[p]) {
				done, err := r.runGroup(o, p, group, bins[i], env)
				if done || err != nil {
					return err
				}
			}
		}
	}
	o.Status = Survived
	return nil
}

// buildTests builds the test binaries of pkgs with the mutant: one go test
// -c for all of them when their binaries' names differ. ok is false when
// the build failed (the mutant is a build error, o says so).
func (r *runner) buildTests(o *Outcome, m *Mutant, pkgs []*testPkg, dir string, env []string) ([]string, bool, error) {
	out := filepath.Join(dir, "bin")
	if err := os.RemoveAll(out); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, false, err
	}
	bins := make([]string, len(pkgs))
	names := map[string]bool{}
	args := []string{"go", "test", "-c", "-o", out + string(filepath.Separator)}
	for i, p := range pkgs {
		base := path.Base(p.Import) + ".test"
		if names[base] { // go test -c would name two binaries alike
			args = nil
			break
		}
		names[base] = true
		bins[i] = filepath.Join(out, base)
		args = append(args, p.Import)
	}
	var argvs [][]string
	if args != nil {
		argvs = append(argvs, args)
	} else {
		for i, p := range pkgs {
			bins[i] = filepath.Join(out, fmt.Sprintf("p%d.test", i))
			argvs = append(argvs, []string{"go", "test", "-c", "-o", bins[i], p.Import})
		}
	}
	for _, argv := range argvs {
		res, err := r.command(env, buildTimeout, argv...)
		if err != nil {
			return nil, false, err
		}
		if res.timedOut || res.exit != 0 {
			o.Status, o.Tail = BuildError, res.out.lines(r.tail)
			if res.timedOut {
				o.By = "the test build timed out"
				fmt.Fprintf(r.log, "raftmutate: warning: %s: building tests timed out after %v\n", m.ID, buildTimeout)
			}
			return nil, false, nil
		}
	}
	return bins, true, nil
}

// runGroup runs one group of tests of p's test binary; done says the
// mutant is judged (killed or timed out).
func (r *runner) runGroup(o *Outcome, p *testPkg, group []*testCase, bin string, env []string) (done bool, err error) {
	var names []string
	var secs float64
	for _, t := range group {
		names, secs = append(names, t.Name), secs+t.Seconds
	}
	// A run past 3 × the tests' measured time + 30 s is run again with 10 ×
	// + 120 s, and only a second expiry is a timeout (a hang): the machine's
	// load can slow a run several times over, and a kill must be the
	// mutant's doing.
	limits := []time.Duration{scaled(secs, 3, 30), scaled(secs, 10, 120)}
	if r.fixedTimeout {
		limits = []time.Duration{r.timeout}
	}
	var res *cmdResult
	var timeout time.Duration
	for _, timeout = range limits {
		res, err = r.commandIn(p.Dir, env, timeout, bin, "-test.run", "^("+strings.Join(names, "|")+")$",
			"-test.count=1", "-test.failfast")
		if err != nil {
			return false, err
		}
		if !res.timedOut {
			break
		}
	}
	switch {
	case res.timedOut:
		o.Status, o.By = TimedOut, fmt.Sprintf("timeout after %v in %s", timeout.Round(time.Second), p.Import)
	case res.exit != 0:
		o.Status, o.By = Killed, res.out.killedBy(res.exit)
	default:
		return false, nil
	}
	o.Tail = res.out.lines(r.tail)
	return true, nil
}

// scaled is k × secs seconds + slack seconds.
func scaled(secs, k, slack float64) time.Duration {
	return time.Duration((k*secs + slack) * float64(time.Second))
}

// cheapFirst orders tests by their measured time and cuts them into at
// most three runs: those up to 1 s in all, up to 10 s, and the rest. Most
// kills come from a quick test, and go test runs a binary's tests in
// source order, so one run would wait for slow tests first.
func cheapFirst(tests []*testCase) [][]*testCase {
	sorted := append([]*testCase(nil), tests...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seconds < sorted[j].Seconds })
	var groups [][]*testCase
	var cur []*testCase
	var sum float64
	limits := []float64{1, 10}
	for _, t := range sorted {
		if len(limits) > 0 && len(cur) > 0 && sum+t.Seconds > limits[0] {
			groups, cur, limits = append(groups, cur), nil, limits[1:]
		}
		cur, sum = append(cur, t), sum+t.Seconds
	}
	return append(groups, cur)
}

// buildTimeout bounds one go build or go test -c of a mutant.
const buildTimeout = 10 * time.Minute
