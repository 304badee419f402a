package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// runTool runs raftmutate as main would and returns its stdout, stderr and
// exit status.
func runTool(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(args, &stdout, &stderr)
	code := 0
	if err != nil {
		exit, ok := err.(exitError)
		if !ok {
			t.Fatalf("raftmutate %v: %v\nstderr:\n%s", args, err, stderr.String())
		}
		code = int(exit)
	}
	return stdout.String(), stderr.String(), code
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func readOutcomes(t *testing.T, path string) map[string]Outcome {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var outs []Outcome
	if err := json.Unmarshal(b, &outs); err != nil {
		t.Fatal(err)
	}
	m := map[string]Outcome{}
	for _, o := range outs {
		m[o.ID] = o
	}
	return m
}

// The fixture whose tests kill every mutant scores 1.0; the mutant that
// does not compile is reported and not counted.
func TestStrongFixtureScoresOne(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test once per mutant")
	}
	tmp := t.TempDir()
	js, report := filepath.Join(tmp, "out.json"), filepath.Join(tmp, "report.md")
	stdout, stderr, code := runTool(t, "-C", "testdata/strong", "-workers", "2", "-json", js, "-report", report, ".")
	want := "mutants=19 killed=18 timeout=0 survived=0 builderror=1 equivalent=0 score=1.00 result=ok"
	if code != 0 || lastLine(stdout) != want {
		t.Fatalf("exit %d, last line %q, want %q\nstderr:\n%s", code, lastLine(stdout), want, stderr)
	}
	outs := readOutcomes(t, js)
	if o := outs["strong.go:33:8:minmax-drop:1"]; o.Status != BuildError || len(o.Tail) == 0 {
		t.Errorf("max(x, 1) -> 1: %+v, want build-error (lo becomes an int) with the compiler's lines", o)
	}
	if o := outs["strong.go:14:7:cmp-flip:0"]; o.Status != Killed || o.By != "tests TestCounter" || len(o.Tail) == 0 {
		t.Errorf("d < 0 flipped: %+v, want killed by TestCounter with the last lines", o)
	}
	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| . | 19 | 19 | 18 | 0 | 0 | 1 | 0 | 1.00 |", "### Killed (18)", "### Build errors (not counted) (1)", want} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
}

// The fixture whose test never tries a boundary leaves exactly the two
// comparison flips alive, and the run is below the threshold.
func TestWeakFixtureLeavesSurvivors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test once per mutant")
	}
	js := filepath.Join(t.TempDir(), "out.json")
	stdout, stderr, code := runTool(t, "-C", "testdata/weak", "-json", js, "-build-check=false", ".")
	want := "mutants=4 killed=2 timeout=0 survived=2 builderror=0 equivalent=0 score=0.50 result=below-threshold"
	if code != 1 || lastLine(stdout) != want {
		t.Fatalf("exit %d, last line %q, want %q\nstderr:\n%s", code, lastLine(stdout), want, stderr)
	}
	var survivors []string
	for id, o := range readOutcomes(t, js) {
		if o.Status == Survived {
			survivors = append(survivors, id)
		}
	}
	sort.Strings(survivors)
	got := strings.Join(survivors, " ")
	if got != "weak.go:6:12:cmp-flip:0 weak.go:6:22:cmp-flip:0" {
		t.Errorf("survivors %s", got)
	}
	if !regexp.MustCompile(`weak.go:6:12:cmp-flip:0 survived \S+: return lo <= x && x < hi  =>  return lo < x && x < hi`).MatchString(stderr) {
		t.Errorf("progress does not show the surviving change:\n%s", stderr)
	}
}

// A judge that fails on the unchanged package is refused before any mutant runs.
func TestBaselineMustPass(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run([]string{"-C", "testdata/weak", "-judge", "echo broken; exit 3", "."}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "fails on the unchanged package") || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("err = %v", err)
	}
}

// -list, -only and -sample select mutants without running anything.
func TestListOnlySample(t *testing.T) {
	stdout, _, code := runTool(t, "-C", "testdata/strong", "-list", ".")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 19 || !strings.HasPrefix(lines[0], "strong.go:6:9:minmax-drop:0\t") {
		t.Fatalf("exit %d, list:\n%s", code, stdout)
	}
	stdout, _, _ = runTool(t, "-C", "testdata/strong", "-list", "-only", "strong.go:22:43:off-by-one:1,strong.go:6:9:minmax-drop:0", ".")
	if got := strings.Count(stdout, "\n"); got != 2 || !strings.Contains(stdout, "return c.n + 2") {
		t.Errorf("-only listed:\n%s", stdout)
	}
	var out, stderr bytes.Buffer
	if err := run([]string{"-C", "testdata/strong", "-list", "-only", "strong.go:1:1:cmp-flip:0", "."}, &out, &stderr); err == nil || !strings.Contains(err.Error(), "no such mutant") {
		t.Errorf("unknown -only id: %v", err)
	}
	a, _, _ := runTool(t, "-C", "testdata/strong", "-list", "-sample", "5", "-seed", "7", ".")
	b, _, _ := runTool(t, "-C", "testdata/strong", "-list", "-sample", "5", "-seed", "7", ".")
	c, _, _ := runTool(t, "-C", "testdata/strong", "-list", "-sample", "5", "-seed", "8", ".")
	if a != b || strings.Count(a, "\n") != 5 {
		t.Errorf("sample not deterministic or not of 5:\n%s\n%s", a, b)
	}
	if a == c {
		t.Errorf("seeds 7 and 8 chose the same sample:\n%s", a)
	}
}

// A sample keeps each mutant's membership when others come and go.
func TestSampleStable(t *testing.T) {
	var ms []Mutant
	for i := 0; i < 200; i++ {
		m := Mutant{File: "p/f.go", Line: i + 1, Col: 1, Op: OpCmpFlip}
		m.setID()
		ms = append(ms, m)
	}
	s1 := sample(ms, 20, 1)
	in := map[string]bool{}
	for _, m := range s1 {
		in[m.ID] = true
	}
	// Remove a mutant that was not chosen: the sample is the same.
	var fewer []Mutant
	removed := false
	for _, m := range ms {
		if !in[m.ID] && !removed {
			removed = true
			continue
		}
		fewer = append(fewer, m)
	}
	s2 := sample(fewer, 20, 1)
	if listing(s1) != listing(s2) {
		t.Errorf("sample changed when an unchosen mutant left:\n%s\n%s", listing(s1), listing(s2))
	}
	for i := 1; i < len(s1); i++ {
		if s1[i-1].Line >= s1[i].Line {
			t.Fatalf("sample not in source order")
		}
	}
}

// A timeout kills the judge's whole process group, children included.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	r := &runner{root: t.TempDir()}
	start := time.Now()
	res, err := r.command(nil, 300*time.Millisecond, "sh", "-c", "sleep 30 & sleep 30; wait")
	if err != nil {
		t.Fatal(err)
	}
	if !res.timedOut {
		t.Fatalf("not timed out: exit %d", res.exit)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("took %v: the background child kept the judge alive", d)
	}
}
