package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func fakePackage(dir string, n int) *Package {
	p := &Package{Dir: dir}
	for i := 0; i < n; i++ {
		m := Mutant{File: dir + "/f.go", Line: i + 1, Col: 2, Op: OpEqFlip, Pkg: dir}
		m.setID()
		p.Mutants = append(p.Mutants, m)
	}
	return p
}

func TestReadEquivalents(t *testing.T) {
	eq, err := readEquivalents(strings.NewReader("# comment\n\np/f.go:3:2:eq-flip:0   the flag is never read after Close\n"), "eq.txt")
	if err != nil || len(eq) != 1 || eq["p/f.go:3:2:eq-flip:0"] != "the flag is never read after Close" {
		t.Fatalf("eq %v, err %v", eq, err)
	}
	for _, bad := range []string{
		"p/f.go:3:2:eq-flip:0\n",                           // no argument
		"p/f.go:3:eq-flip why\n",                           // not an id
		"p/f.go:3:2:eq-flip:0 a\np/f.go:3:2:eq-flip:0 b\n", // twice
	} {
		if _, err := readEquivalents(strings.NewReader(bad), "eq.txt"); err == nil || !strings.Contains(err.Error(), "eq.txt:") {
			t.Errorf("%q accepted (err %v)", bad, err)
		}
	}
}

// At most 5% of a package's mutants may be declared equivalent; a
// declaration naming no mutant of the package is reported stale, one of
// another package ignored.
func TestEquivalentsCap(t *testing.T) {
	p := fakePackage("p", 40)
	eq := map[string]string{p.Mutants[0].ID: "a", p.Mutants[1].ID: "b", "p/f.go:99:2:eq-flip:0": "moved", "q/g.go:1:1:eq-flip:0": "other package"}
	stale, err := checkEquivalents([]*Package{p}, eq)
	if err != nil || len(stale) != 1 || stale[0] != "p/f.go:99:2:eq-flip:0" {
		t.Fatalf("2 of 40: stale %v, err %v", stale, err)
	}
	eq[p.Mutants[2].ID] = "c"
	if _, err := checkEquivalents([]*Package{p}, eq); err == nil || !strings.Contains(err.Error(), "3 of 40 mutants declared equivalent") {
		t.Fatalf("3 of 40 accepted: %v", err)
	}
}

// The refusal happens before anything runs.
func TestEquivalentsCapRefusesRun(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/eq.txt"
	if err := writeFile(path, "weak.go:6:12:cmp-flip:0 lo == x is never asked\n"); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run([]string{"-C", "testdata/weak", "-equivalents", path, "-judge", "exit 1", "."}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "1 of 4 mutants declared equivalent") {
		t.Fatalf("err = %v", err)
	}
}

// Score = killed / (run − build errors − equivalent); timeouts count as
// killed; a declared equivalent that was killed counts as killed.
func TestTallyAndReport(t *testing.T) {
	p := fakePackage("p", 6)
	outs := []Outcome{
		{Mutant: p.Mutants[0], Status: Killed, By: "tests TestA", Seconds: 1},
		{Mutant: p.Mutants[1], Status: TimedOut, By: "timeout after 30s", Seconds: 30},
		{Mutant: p.Mutants[2], Status: Survived, Seconds: 1},
		{Mutant: p.Mutants[3], Status: Survived, Equivalent: "never read", Seconds: 1},
		{Mutant: p.Mutants[4], Status: BuildError, Seconds: 1},
		{Mutant: p.Mutants[5], Status: Killed, Equivalent: "wrongly declared", By: "tests TestB", Seconds: 1},
	}
	pr := &PackageResult{Dir: "p", Generated: 6, Outcomes: outs}
	for i := range outs {
		pr.Tally.add(&outs[i])
	}
	want := "mutants=6 killed=3 timeout=1 survived=1 builderror=1 equivalent=1 score=0.75 result=below-threshold"
	if got := pr.Tally.Line(0.95); got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	if got := pr.Tally.Line(0.75); !strings.HasSuffix(got, "score=0.75 result=ok") {
		t.Errorf("at threshold 0.75: %q", got)
	}
	var b bytes.Buffer
	writeReport(&b, &RunInfo{Judge: "go test", Ops: "all", Selection: "all", Workers: 1, Timeout: "30s", Commit: "abc", Threshold: 0.95}, []*PackageResult{pr})
	md := b.String()
	for _, s := range []string{
		"| p | 6 | 6 | 3 | 1 | 1 | 1 | 1 | 0.75 |",
		"### Survived (1)", "### Declared equivalent (2)", "**killed although declared equivalent: remove the declaration** wrongly declared",
		"### Timed out (1)", "### Build errors (not counted) (1)", "### Killed (1)", want,
	} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
	var none Tally
	if got := none.Line(0.95); got != "mutants=0 killed=0 timeout=0 survived=0 builderror=0 equivalent=0 score=n/a result=ok" {
		t.Errorf("empty tally: %q", got)
	}
	// 0.949 is below 0.95 and must not print as 0.95.
	near := Tally{Mutants: 1000, Killed: 949, Survived: 51}
	if got := near.Line(0.95); !strings.HasSuffix(got, "score=0.94 result=below-threshold") {
		t.Errorf("0.949: %q", got)
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

// ranked's first n are sample's n: a run in rank order stopped after n
// mutants has judged the sample of n.
func TestRankedPrefixIsSample(t *testing.T) {
	var ms []Mutant
	for i := range 50 {
		m := Mutant{File: "f.go", Line: i + 1, Col: 1, Op: OpCmpFlip}
		m.setID()
		ms = append(ms, m)
	}
	r := ranked(ms, 9)
	for _, n := range []int{1, 7, 30} {
		want := map[string]bool{}
		for _, m := range sample(ms, n, 9) {
			want[m.ID] = true
		}
		for _, m := range r[:n] {
			if !want[m.ID] {
				t.Errorf("n=%d: %s is among ranked's first but not in the sample", n, m.ID)
			}
		}
	}
}
