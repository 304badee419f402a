package tla

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTLCConfirmsMembershipCounterexample: the explorer's counterexample
// for -bug config-before-own-term-commit (spec/testdata/counterexamples)
// is a behaviour of DurableRaft.tla with the bug, TLC finds
// LeaderCompleteness violated along it, and the model with the fix does
// not explain it (docs/membership.md). The MC config of the same sub-model
// (MC_bug_config-before-own-term-commit_LeaderCompleteness.cfg, 13 million
// states) is "ci: long".
func TestTLCConfirmsMembershipCounterexample(t *testing.T) {
	jar := tlcJar(t)
	data, err := os.ReadFile("../spec/testdata/counterexamples/config-before-own-term-commit.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile("TraceDurableRaft.cfg")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	withInv := strings.Replace(string(cfg), "POSTCONDITION TraceMatched", "POSTCONDITION TraceMatched\nINVARIANT LeaderCompleteness", 1)
	if err := os.WriteFile(filepath.Join(dir, "inv.cfg"), []byte(withInv), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.ndjson"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	here, _ := os.Getwd()
	out, _ := runTLC(t, jar, dir, 1, "-config", filepath.Join(dir, "inv.cfg"), filepath.Join(here, "TraceDurableRaft.tla"))
	if !strings.Contains(out, "Error: Invariant LeaderCompleteness is violated") {
		t.Fatalf("TLC does not find LeaderCompleteness violated along the counterexample:\n%s", out)
	}
	if ok, out := validateTrace(t, jar, data); !ok {
		t.Fatalf("TLC rejects the counterexample as a behaviour of the model with the bug:\n%s", out)
	}
	fixed := strings.Replace(string(data), `"bugs":"config-before-own-term-commit",`, "", 1)
	if fixed == string(data) {
		t.Fatal("no bugs field in the counterexample's config")
	}
	if ok, _ := validateTrace(t, jar, []byte(fixed)); ok {
		t.Fatal("TLC accepts the counterexample with the fix on")
	}
}
