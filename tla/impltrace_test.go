package tla

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/durableraft/durableraft/impl/raft/rafttest"
	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

// implTrace is a trace of impl/raft that TLC validates afresh each run.
type implTrace struct {
	name   string
	events func(t *testing.T) []trace.Event
	// must: actions the trace has to contain, so that it shows what it is for
	must []string
}

func scriptTrace(script string) func(t *testing.T) []trace.Event {
	return func(t *testing.T) []trace.Event {
		res, err := rafttest.RunScript(filepath.Join("..", "impl", "raft", "testdata", script),
			rafttest.ScriptOptions{CheckTrace: spec.CheckTrace})
		if err != nil {
			t.Fatal(err)
		}
		if res.TraceErr != nil || len(res.Violations) > 0 || len(res.Mismatches) > 0 {
			t.Fatalf("%s: %v %v %v", script, res.TraceErr, res.Violations, res.Mismatches)
		}
		return res.Cluster.Events
	}
}

func randomTrace(o rafttest.RandomOptions, steps int) func(t *testing.T) []trace.Event {
	return func(t *testing.T) []trace.Event {
		o.Steps = steps
		c, err := rafttest.RunRandom(o)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Violations) > 0 {
			t.Fatal(c.Violations)
		}
		return c.Events
	}
}

// TestTLCValidatesImplTraces: TLC accepts traces of the core's repair from
// peers and of its membership changes, written now (not kept; the core
// counts repair answers in id order, so each run writes the same trace,
// conformance/coretrace TestRepairTraceDeterministic). tla/traces/impl/ keeps
// scenario-membership and repair/scenario-three_nodes_one_peer (tlc.sh).
func TestTLCValidatesImplTraces(t *testing.T) {
	jar := tlcJar(t)
	for _, c := range []implTrace{
		{"four_nodes_two_truncated", scriptTrace("repair/four_nodes_two_truncated.txt"),
			[]string{"RequestRepair", "HandleRepairRequest", "HandleRepairResponse", "Corrupt"}},
		{"membership_truncation", scriptTrace("membership_truncation.txt"), []string{"ChangeConfig", "HandleAppendEntriesBatch"}},
		{"repair-random-seed-3", randomTrace(rafttest.RepairRandom(3), 400), []string{"RequestRepair", "HandleRepairResponse"}},
		{"membership-random-seed-1", randomTrace(rafttest.MembershipRandom(1), 300), []string{"ChangeConfig"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			events := c.events(t)
			seen := map[string]bool{}
			for _, e := range events {
				seen[e.Action] = true
			}
			for _, a := range c.must {
				if !seen[a] {
					t.Fatalf("no %s in the trace (%d events)", a, len(events))
				}
			}
			if err := spec.CheckTrace(events); err != nil {
				t.Fatalf("spec.CheckTrace rejects it: %v", err)
			}
			var b bytes.Buffer
			w := trace.NewWriter(&b)
			for _, e := range events {
				if err := w.Write(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if ok, out := validateTrace(t, jar, b.Bytes()); !ok {
				t.Fatalf("TLC rejects the trace (%d events):\n%s", len(events), tail(out, 2000))
			}
			t.Logf("%d events accepted by TLC", len(events))
		})
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
