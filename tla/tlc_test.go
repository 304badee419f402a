package tla

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/spec"
)

// Set TLC_FULL=1 to run every MC config (not only those marked "ci: yes")
// through both checkers; tla/tlc.sh all covers the same through the expect
// lines. Set RAFT_TLA=/path/to/raft.tla to model-check Ongaro's spec too.

// tlcJar returns the path of tla2tools.jar, or skips the test with one line.
func tlcJar(t *testing.T) string {
	t.Helper()
	jar := os.Getenv("TLA2TOOLS_JAR")
	if jar == "" {
		home, _ := os.UserHomeDir()
		jar = filepath.Join(home, ".cache", "tla", "tla2tools.jar")
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("TLC parts skipped: no java on PATH")
	}
	if _, err := os.Stat(jar); err != nil {
		t.Skipf("TLC parts skipped: no tla2tools.jar at %s (set TLA2TOOLS_JAR)", jar)
	}
	return jar
}

var (
	tlcCounts    = regexp.MustCompile(`(?m)^(\d+) states generated, (\d+) distinct states found`)
	tlcViolation = regexp.MustCompile(`(?m)^Error: Invariant (\w+) is violated`)
)

// runTLC runs TLC in dir and returns its output.
func runTLC(t *testing.T, jar, dir string, workers int, args ...string) (string, error) {
	t.Helper()
	meta := t.TempDir()
	cmd := exec.Command("java", append([]string{"-XX:+UseParallelGC", "-cp", jar, "tlc2.TLC",
		"-workers", strconv.Itoa(workers), "-metadir", meta, "-noGenerateSpecTE", "-nowarning"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// tlcResult is TLC's verdict in the explorer's words:
// "distinct=N generated=N result=ok" or "result=violation invariant=NAME".
func tlcResult(out string, err error) string {
	if m := tlcViolation.FindStringSubmatch(out); m != nil {
		return "result=violation invariant=" + m[1]
	}
	m := tlcCounts.FindAllStringSubmatch(out, -1)
	if err != nil || m == nil || !strings.Contains(out, "No error has been found") {
		return fmt.Sprintf("result=error (%v)", err)
	}
	last := m[len(m)-1]
	return fmt.Sprintf("distinct=%s generated=%s result=ok", last[2], last[1])
}

// goResult is the explorer's verdict, in the same words.
func goResult(t *testing.T, cfg spec.Config, invariant string, without ...spec.ActionSet) string {
	t.Helper()
	m, err := spec.NewModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opt := spec.Options{Workers: 2, Invariant: invariant}
	if len(without) > 0 {
		opt.Without = without[0]
	}
	res, err := spec.Explore(m, opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		return "result=violation invariant=" + res.Violation.Invariant
	}
	return fmt.Sprintf("distinct=%d generated=%d result=ok", res.Distinct, res.Generated)
}

// mcConfig is one tla/MC_*.cfg: the model it sets up and what it expects.
type mcConfig struct {
	Name       string
	Path       string
	Config     spec.Config
	Invariants []string
	Expect     string
	CI         string // "yes", "no" or "long"
	// Without is the sub-model of SPECIFICATION SubSpec (raftspec
	// -without; MCDurableRaft.tla).
	Without spec.ActionSet
}

var cfgAssign = regexp.MustCompile(`^\s*(\w+)\s*=\s*(.+?)\s*$`)

func parseMCConfig(path string) (mcConfig, error) {
	c := mcConfig{Name: strings.TrimSuffix(filepath.Base(path), ".cfg"), Path: path}
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	var bugs []string
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, `\* expect: `):
			c.Expect = strings.TrimPrefix(line, `\* expect: `)
		case strings.HasPrefix(line, `\* ci: `):
			c.CI = strings.TrimPrefix(line, `\* ci: `)
		case strings.HasPrefix(line, "INVARIANTS "):
			c.Invariants = strings.Fields(strings.TrimPrefix(line, "INVARIANTS "))
		}
		m := cfgAssign.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		val := m[2]
		n, _ := strconv.Atoi(val)
		switch m[1] {
		case "Server":
			c.Config.Servers = strings.Count(val, `"s`)
		case "Value":
			c.Config.Values = len(strings.Split(strings.Trim(val, "{}"), ","))
		case "Profile":
			if c.Config.Profile, err = spec.ParseProfile(strings.Trim(val, `"`)); err != nil {
				return c, err
			}
		case "Bugs":
			for _, b := range strings.Split(strings.Trim(val, "{}"), ",") {
				if b = strings.Trim(strings.TrimSpace(b), `"`); b != "" {
					bugs = append(bugs, b)
				}
			}
		case "Production":
			c.Config.Production = val == "TRUE"
		case "Membership":
			c.Config.Membership = val == "TRUE"
		case "InitVoters":
			c.Config.InitVoters = n
		case "Without":
			var names []string
			for _, a := range strings.Split(strings.Trim(val, "{}"), ",") {
				if a = strings.Trim(strings.TrimSpace(a), `"`); a != "" {
					names = append(names, a)
				}
			}
			if c.Without, err = spec.ParseActions(strings.Join(names, ",")); err != nil {
				return c, err
			}
		case "Crashes":
			c.Config.Crashes = n
		case "Corruptions":
			c.Config.Corruptions = n
		case "PowerLosses":
			c.Config.PowerLosses = n
		case "Repair":
			c.Config.Repair = val == "TRUE"
		case "Wipes":
			c.Config.Wipes = n
		case "MarkedVotes":
			c.Config.MarkedVotes = val == "TRUE"
		case "MaxTerm":
			c.Config.MaxTerm = n
		case "MaxLog":
			c.Config.MaxLog = n
		case "MaxDup":
			c.Config.MaxDup = n
		case "MaxMsgs":
			c.Config.MaxMsgs = n
		}
	}
	if c.Config.Bugs, err = spec.ParseBugs(strings.Join(bugs, ",")); err != nil {
		return c, err
	}
	if c.Expect == "" || len(c.Invariants) == 0 {
		return c, fmt.Errorf("%s: no expect line or no INVARIANTS", path)
	}
	return c, c.Config.Validate()
}

// mcConfigs lists the MC configs to run: those marked "ci: yes", or with
// TLC_FULL=1 all but the long ones.
func mcConfigs(t *testing.T) []mcConfig {
	t.Helper()
	paths, err := filepath.Glob("MC_*.cfg")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no MC configs: %v", err)
	}
	full := os.Getenv("TLC_FULL") != ""
	var out []mcConfig
	for _, p := range paths {
		c, err := parseMCConfig(p)
		if err != nil {
			t.Fatal(err)
		}
		if c.CI == "yes" || (full && c.CI == "no") {
			out = append(out, c)
		}
	}
	return out
}

// goVerdict runs the explorer as the config's INVARIANTS say: one invariant
// alone, all of the profile's together, or (a bug config's holding set)
// each alone, which must all give the same result.
func goVerdict(t *testing.T, c mcConfig) string {
	t.Helper()
	if len(c.Invariants) == 1 {
		return goResult(t, c.Config, c.Invariants[0], c.Without)
	}
	m, _ := spec.NewModel(c.Config)
	all, _ := m.InvariantsFor("")
	var names []string
	for _, inv := range all {
		names = append(names, inv.Name)
	}
	if slices.Equal(names, c.Invariants) {
		return goResult(t, c.Config, "", c.Without)
	}
	var got string
	for _, inv := range c.Invariants {
		r := goResult(t, c.Config, inv, c.Without)
		if got != "" && r != got {
			t.Errorf("%s: %s alone gives %s, another gives %s", c.Name, inv, r, got)
		}
		got = r
	}
	return got
}

// TestExpectLines keeps each MC config's expect line (which tlc.sh compares
// TLC with) equal to what the Go explorer reports on the same bounds. It
// needs no TLC.
func TestExpectLines(t *testing.T) {
	for _, c := range mcConfigs(t) {
		t.Run(c.Name, func(t *testing.T) {
			if got := goVerdict(t, c); got != c.Expect {
				t.Errorf("Go explorer: %s\n%s expects: %s", got, c.Path, c.Expect)
			}
		})
	}
}

// TestTLCMatchesGo runs TLC and the Go explorer on the same bounds and
// compares distinct and generated state counts, or the violated invariant.
func TestTLCMatchesGo(t *testing.T) {
	jar := tlcJar(t)
	profiles := map[spec.Profile]int{}
	for _, c := range mcConfigs(t) {
		if strings.HasSuffix(c.Expect, "result=ok") && c.Config.Bugs == 0 {
			profiles[c.Config.Profile]++
		}
		t.Run(c.Name, func(t *testing.T) {
			tlc := tlcResult(runTLC(t, jar, ".", 2, "-config", c.Name+".cfg", "MCDurableRaft.tla"))
			if g := goVerdict(t, c); tlc != g {
				t.Errorf("TLC: %s\nGo:  %s", tlc, g)
			}
		})
	}
	for _, p := range []spec.Profile{spec.ProfileRaft, spec.ProfileDurable} {
		if profiles[p] < 2 {
			t.Errorf("profile %v: %d bound settings compared, want >= 2", p, profiles[p])
		}
	}
}

// validateTrace runs TraceDurableRaft on a trace: true when TLC accepts it.
func validateTrace(t *testing.T, jar string, data []byte) (bool, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "trace.ndjson"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	here, _ := os.Getwd()
	out, err := runTLC(t, jar, dir, 1, "-config", filepath.Join(here, "TraceDurableRaft.cfg"),
		filepath.Join(here, "TraceDurableRaft.tla"))
	switch {
	case err == nil && strings.Contains(out, "No error has been found"):
		return true, out
	case strings.Contains(out, "TraceMatched: no spec step explains line"):
		return false, out
	}
	t.Fatalf("TLC failed on the trace: %v\n%s", err, out)
	return false, out
}

// TestTLCTraces has TLC accept a counterexample the explorer finds now and
// reject mutations of it that spec.CheckTrace rejects too.
func TestTLCTraces(t *testing.T) {
	jar := tlcJar(t)
	m, steps, err := Counterexample(durableSmall("follower-acks-appended"), "CommittedIsDurable")
	if err != nil {
		t.Fatal(err)
	}
	cex, err := EncodeTrace(m, steps)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckGo(cex); err != nil {
		t.Fatalf("spec rejects its own counterexample: %v", err)
	}
	if ok, out := validateTrace(t, jar, cex); !ok {
		t.Fatalf("TLC rejects the explorer's counterexample:\n%s", out)
	}
	for name, edit := range map[string]func(data []byte) ([]byte, error){
		"without-bugs": func(d []byte) ([]byte, error) { return MutateTrace(d, WithoutBugs) },
		"wrong-term":   func(d []byte) ([]byte, error) { return MutateTrace(d, WrongTerm(len(steps)/2)) },
		"skipped-step": func(d []byte) ([]byte, error) { return MutateTrace(d, SkipFirst("Timeout")) },
	} {
		t.Run(name, func(t *testing.T) {
			bad, err := edit(cex)
			if err != nil {
				t.Fatal(err)
			}
			if CheckGo(bad) == nil {
				t.Fatal("spec accepts the mutated trace")
			}
			if ok, _ := validateTrace(t, jar, bad); ok {
				t.Fatal("TLC accepts the mutated trace")
			}
		})
	}
}

// TestGeneratedTracesCurrent fails when tla/traces/ is stale: regenerate it
// with `go generate ./tla` after a change to spec/.
func TestGeneratedTracesCurrent(t *testing.T) {
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	var want []string
	for _, f := range files {
		want = append(want, f.Name)
		if f.Accept {
			events += f.Events()
		}
		got, err := os.ReadFile(filepath.Join("traces", f.Name))
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("traces/%s is stale or missing: run go generate ./tla", f.Name)
		}
	}
	have, _ := filepath.Glob("traces/*.ndjson")
	more, _ := filepath.Glob("traces/mutated/*.ndjson")
	for _, p := range append(have, more...) {
		if !slices.Contains(want, strings.TrimPrefix(p, "traces/")) {
			t.Errorf("%s is not generated any more: run go generate ./tla", p)
		}
	}
	if events < 1000 {
		t.Errorf("%d events in accepted traces, want >= 1000", events)
	}
}

// TestOngaroRaftTLA model-checks raft.tla itself (RAFT_TLA=path) under the
// bounds of MC_raft_s2_m2 and compares it with profile raft in Go. raft.tla
// is copied into a temporary directory, never into the repository.
func TestOngaroRaftTLA(t *testing.T) {
	path := os.Getenv("RAFT_TLA")
	if path == "" {
		t.Skip("set RAFT_TLA=/path/to/raft.tla to model-check Ongaro's spec")
	}
	jar := tlcJar(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mc := `---- MODULE MCraft ----
EXTENDS raft
Bound == /\ \A i \in Server : currentTerm[i] <= 2
         /\ \A i \in Server : Len(log[i]) <= 1
         /\ \A m \in DOMAIN messages : messages[m] <= 1
         /\ Cardinality(DOMAIN messages) <= 2
====
`
	cfg := `INIT Init
NEXT Next
CONSTANTS
  Server = {s1, s2}
  Value = {v1}
  Follower = Follower
  Candidate = Candidate
  Leader = Leader
  Nil = Nil
  RequestVoteRequest = RequestVoteRequest
  RequestVoteResponse = RequestVoteResponse
  AppendEntriesRequest = AppendEntriesRequest
  AppendEntriesResponse = AppendEntriesResponse
CONSTRAINT Bound
CHECK_DEADLOCK FALSE
`
	for name, data := range map[string][]byte{"raft.tla": src, "MCraft.tla": []byte(mc), "MCraft.cfg": []byte(cfg)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tlc := tlcResult(runTLC(t, jar, dir, 2, "-config", "MCraft.cfg", "MCraft.tla"))
	g := goResult(t, spec.Config{Profile: spec.ProfileRaft, Servers: 2, Values: 1,
		MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 2}, "")
	if tlc != g || tlc != "distinct=15254 generated=152835 result=ok" {
		t.Errorf("raft.tla under TLC: %s\nprofile raft in Go: %s", tlc, g)
	}
}
