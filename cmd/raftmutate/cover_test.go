package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// With -tests, each mutant is judged by the tests whose run reached its
// block: a mutant in a case list by the switch's (a case list is in no
// block), one in a function literal by the literal's, and one that no test
// reaches survives without a run.
func TestCoverageSelection(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test once per mutant")
	}
	js := filepath.Join(t.TempDir(), "out.json")
	stdout, stderr, code := runTool(t, "-C", "testdata/cover", "-tests", "{pkg}", "-json", js, ".")
	want := "mutants=8 killed=6 timeout=0 survived=2 builderror=0 equivalent=0 score=0.75 result=below-threshold"
	if code != 1 || lastLine(stdout) != want {
		t.Fatalf("exit %d, last line %q, want %q\nstderr:\n%s", code, lastLine(stdout), want, stderr)
	}
	outs := readOutcomes(t, js)
	for id, want := range map[string]struct {
		status     Status
		tests      int
		notCovered bool
		by         string
	}{
		"cover.go:8:9:cmp-flip:0":     {Killed, 1, false, "tests TestSign"}, // case list: anchored at the switch
		"cover.go:11:3:return-drop:0": {Killed, 1, false, "tests TestSign"},
		"cover.go:19:3:if-negate:0":   {Killed, 1, false, "tests TestTwice"}, // inside a function literal
		"cover.go:19:8:cmp-flip:0":    {Survived, 1, false, ""},
		"cover.go:29:11:cmp-flip:0":   {Survived, 0, true, ""}, // Unused: no test runs it
	} {
		o, ok := outs[id]
		if !ok {
			t.Errorf("%s: no outcome", id)
			continue
		}
		if o.Status != want.status || o.Tests != want.tests || o.NotCovered != want.notCovered || o.By != want.by {
			t.Errorf("%s: status %s, %d tests, not covered %v, by %q; want %s, %d, %v, %q",
				id, o.Status, o.Tests, o.NotCovered, o.By, want.status, want.tests, want.notCovered, want.by)
		}
	}
	if !strings.Contains(stderr, "2 tests in 1 packages") || !strings.Contains(stderr, "1 of the 8 mutants to judge are in blocks no test runs") {
		t.Errorf("stderr lacks the coverage summary:\n%s", stderr)
	}
}

func TestCoverProfile(t *testing.T) {
	var cs coverSet
	profile := `mode: set
example.com/m/a.go:3.20,5.2 1 1
example.com/m/a.go:4.10,4.30 1 0
example.com/m/a.go:7.1,9.2 2 0
other.org/x/b.go:1.1,2.2 1 1
`
	if err := cs.addProfile(strings.NewReader(profile), "example.com/m", 0); err != nil {
		t.Fatal(err)
	}
	if err := cs.addProfile(strings.NewReader("example.com/m/a.go:7.1,9.2 2 1\n"), "example.com/m", 1); err != nil {
		t.Fatal(err)
	}
	cs.tests = []*testCase{{Name: "T0"}, {Name: "T1"}}
	for _, c := range []struct {
		line, col int
		known     bool
		tests     string
	}{
		{3, 25, true, "T0"},    // the outer block
		{4, 15, true, ""},      // the inner block (a function literal), which T0 did not run
		{4, 30, true, "T0"},    // the inner block's end is exclusive
		{8, 1, true, "T1"},     // merged from the second profile
		{6, 1, false, "T0 T1"}, // in no block: every test
		{3, 19, false, "T0 T1"},
	} {
		ts, known := cs.covering(&Mutant{File: "a.go", anchorLine: c.line, anchorCol: c.col})
		var names []string
		for _, t := range ts {
			names = append(names, t.Name)
		}
		if known != c.known || strings.Join(names, " ") != c.tests {
			t.Errorf("%d:%d: known %v, tests %q; want %v, %q", c.line, c.col, known, strings.Join(names, " "), c.known, c.tests)
		}
	}
	if _, _, _, err := parseProfileLine("a.go:1.1,2 1 1"); err == nil {
		t.Error("a malformed block parsed")
	}
}

func TestCheapFirst(t *testing.T) {
	var tests []*testCase
	for i, s := range []float64{5, 0.2, 30, 0.5, 0.4, 3} {
		tests = append(tests, &testCase{Name: string(rune('a' + i)), Seconds: s})
	}
	var got []string
	for _, g := range cheapFirst(tests) {
		var names string
		for _, t := range g {
			names += t.Name
		}
		got = append(got, names)
	}
	// by time b e d f a c; 0.2+0.4 <= 1 < +0.5, and 1.1+3+5 <= 10 < +30
	if want := "be dfa c"; strings.Join(got, " ") != want {
		t.Errorf("groups %q, want %q", strings.Join(got, " "), want)
	}
}

// -skip-tests leaves a test out of coverage and judging alike: what only
// it covered is then not covered.
func TestCoverageSkipTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test once per mutant")
	}
	js := filepath.Join(t.TempDir(), "out.json")
	stdout, stderr, _ := runTool(t, "-C", "testdata/cover", "-tests", "{pkg}", "-skip-tests", `^\.\.TestTwice$`,
		"-only", "cover.go:19:3:if-negate:0,cover.go:8:9:cmp-flip:0", "-json", js, ".")
	if want := "mutants=2 killed=1 timeout=0 survived=1 builderror=0 equivalent=0 score=0.50 result=below-threshold"; lastLine(stdout) != want {
		t.Fatalf("last line %q, want %q\nstderr:\n%s", lastLine(stdout), want, stderr)
	}
	if o := readOutcomes(t, js)["cover.go:19:3:if-negate:0"]; o.Status != Survived || !o.NotCovered {
		t.Errorf("Twice's mutant with TestTwice skipped: %+v, want survived, not covered", o)
	}
}
