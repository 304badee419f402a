package tla

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/spec"
)

// wipeStoryTrace replays a story of spec/testdata/wipe and encodes it as a
// trace for TLC. The trace format has no wipes yet (spec's trace writer
// leaves out config.wipes and the peer of AnswerFirstBoot, and
// spec.CheckTrace refuses wipes), so both are added here, for
// TraceDurableRaft only.
func wipeStoryTrace(t *testing.T, path string) (*spec.Story, []byte) {
	t.Helper()
	st, err := spec.ParseStory(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := spec.NewModel(st.Config)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := st.Run(m)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := st.Broken(m, steps); err != nil || d == "" {
		t.Fatalf("%s does not break %s in Go: %q %v", path, st.Expect, d, err)
	}
	data, err := EncodeTrace(m, steps)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for k, st := range steps {
		if l := st.Label; l.Action == spec.ActAnswerFirstBoot {
			node := fmt.Sprintf(`"node":"s%d",`, l.I)
			lines[k] = bytes.Replace(lines[k], []byte(node), []byte(fmt.Sprintf(`%s"peer":"s%d",`, node, l.J)), 1)
		}
	}
	data = bytes.Join(lines, nil)
	withWipes := bytes.Replace(data, []byte(`"config":{`), []byte(fmt.Sprintf(`"config":{"wipes":%d,`, st.Config.Wipes)), 1)
	if bytes.Equal(withWipes, data) {
		t.Fatal("no config in the trace's first line")
	}
	return st, withWipes
}

// TestTLCConfirmsWipeStories: the stories of the first-boot confirmation's
// switches are behaviours of DurableRaft.tla with the switch, TLC finds
// their invariant violated along them, and with the rule on TLC does not
// explain them. wipe-confirm-quorum needs five servers, beyond an MC
// config here (docs/tla.md); wiped-votes has MC_bug_wiped-votes_ElectionSafety
// too.
func TestTLCConfirmsWipeStories(t *testing.T) {
	jar := tlcJar(t)
	cfg, err := os.ReadFile("TraceDurableRaft.cfg")
	if err != nil {
		t.Fatal(err)
	}
	here, _ := os.Getwd()
	for _, story := range []string{"wipe-confirm-quorum.txt", "wiped-votes.txt"} {
		t.Run(story, func(t *testing.T) {
			st, data := wipeStoryTrace(t, filepath.Join("..", "spec", "testdata", "wipe", story))
			dir := t.TempDir()
			withInv := strings.Replace(string(cfg), "POSTCONDITION TraceMatched", "POSTCONDITION TraceMatched\nINVARIANT "+st.Expect, 1)
			if err := os.WriteFile(filepath.Join(dir, "inv.cfg"), []byte(withInv), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "trace.ndjson"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			out, _ := runTLC(t, jar, dir, 1, "-config", filepath.Join(dir, "inv.cfg"), filepath.Join(here, "TraceDurableRaft.tla"))
			if !strings.Contains(out, "Error: Invariant "+st.Expect+" is violated") {
				t.Fatalf("TLC does not find %s violated along the story:\n%s", st.Expect, out)
			}
			if ok, out := validateTrace(t, jar, data); !ok {
				t.Fatalf("TLC rejects the story as a behaviour of the model with its switch:\n%s", out)
			}
			bug := fmt.Sprintf(`"bugs":%q,`, st.Config.Bugs.String())
			fixed := bytes.Replace(data, []byte(bug), nil, 1)
			if bytes.Equal(fixed, data) {
				t.Fatalf("no %s in the trace's config", bug)
			}
			if ok, _ := validateTrace(t, jar, fixed); ok {
				t.Fatal("TLC accepts the story with the rule on")
			}
		})
	}
}
