package coretrace

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/durableraft/durableraft/impl/raft/rafttest"
	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

// TestRandomizedTraces replays with spec.CheckTrace the trace of every
// seeded randomized run of impl/raft's TestRandomized (the same seeds, the
// same fault mix, rafttest.DefaultRandom), which also checks the cluster
// invariants after every step.
func TestRandomizedTraces(t *testing.T) {
	seeds := 120
	if testing.Short() {
		seeds = 20
	}
	events := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		c, err := rafttest.RunRandom(rafttest.DefaultRandom(seed))
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
			continue
		}
		for _, v := range c.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		if err := spec.CheckTrace(c.Events); err != nil {
			t.Errorf("seed %d: spec.CheckTrace rejects the trace (%d events): %v", seed, len(c.Events), err)
		}
		events += len(c.Events)
	}
	t.Logf("%d seeds, %d events, all traces accepted", seeds, events)
}

var writeTraces = flag.Bool("write-impl-traces", false, "rewrite tla/traces/impl/ from the scenarios and seeds below")

// The impl traces kept for TLC's trace validation (tla/tlc.sh trace): a few
// scenarios and short randomized runs, and mutations of them that both
// checkers must reject.
var keptScenarios = []string{"bug661", "truncated_voter", "boot_policy", "conflict_batching", "wal_failure"}

const keptSeeds = 3

func implTraceDir() string { return filepath.Join("..", "..", "tla", "traces", "impl") }

// keptTraces runs what tla/traces/impl/ holds.
func keptTraces(t *testing.T) map[string][]trace.Event {
	t.Helper()
	out := map[string][]trace.Event{}
	for _, name := range keptScenarios {
		res := runScript(t, filepath.Join(scriptDir, name+".txt"), 0)
		out["scenario-"+name] = res.Cluster.Events
	}
	for seed := uint64(1); seed <= keptSeeds; seed++ {
		o := rafttest.DefaultRandom(seed)
		o.Steps = 150
		c, err := rafttest.RunRandom(o)
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("random-seed-%03d", seed)] = c.Events
	}
	return out
}

// mutations alter one event of a trace; each result must be rejected.
var mutations = []struct {
	name, what string
	mutate     func(es []trace.Event) bool
}{
	{"wrong-term", "an event logs currentTerm one higher", func(es []trace.Event) bool {
		return mutateFirst(es, func(e *trace.Event) bool { return e.State != nil && e.Action == "UpdateTerm" },
			func(e *trace.Event) { e.State.CurrentTerm++ })
	}},
	{"ack-before-durable", "an already-done acknowledgment logs a durable index one short", func(es []trace.Event) bool {
		return mutateFirst(es, func(e *trace.Event) bool {
			return e.Branch == "already-done" && len(e.Msg.Mentries) > 0 && e.State.DurableLen != nil
		}, func(e *trace.Event) { *e.State.DurableLen = e.Msg.MprevLogIndex + len(e.Msg.Mentries) - 1 })
	}},
	{"commit-too-far", "an AdvanceCommitIndex logs a commit index one higher", func(es []trace.Event) bool {
		return mutateFirst(es, func(e *trace.Event) bool { return e.Action == "AdvanceCommitIndex" },
			func(e *trace.Event) { e.State.CommitIndex++ })
	}},
	{"wrong-branch", "a conflict or append logged as already-done", func(es []trace.Event) bool {
		return mutateFirst(es, func(e *trace.Event) bool { return e.Branch == "append" },
			func(e *trace.Event) { e.Branch = "already-done" })
	}},
}

func mutateFirst(es []trace.Event, pick func(*trace.Event) bool, change func(*trace.Event)) bool {
	for k := range es {
		if pick(&es[k]) {
			change(&es[k])
			return true
		}
	}
	return false
}

func encodeEvents(t *testing.T, es []trace.Event) []byte {
	t.Helper()
	var b bytes.Buffer
	w := trace.NewWriter(&b)
	for _, e := range es {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestImplTracesKept: the traces of tla/traces/impl/ are what the core
// writes today, spec.CheckTraceReader (raftspec check-trace) accepts them,
// and a trace with one event altered is rejected. With -write-impl-traces
// the directory is rewritten.
func TestImplTracesKept(t *testing.T) {
	dir := implTraceDir()
	for name, events := range keptTraces(t) {
		b := encodeEvents(t, events)
		path := filepath.Join(dir, name+".ndjson")
		if *writeTraces {
			if err := os.MkdirAll(filepath.Join(dir, "mutated"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := spec.CheckTraceReader(bytes.NewReader(b)); err != nil {
			t.Errorf("%s: rejected after %d events: %v", name, n, err)
		}
		kept, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(kept, b) {
			t.Errorf("%s differs from what the core writes now (run with -write-impl-traces): %v", path, err)
		}
		for _, mu := range mutations {
			es, err := trace.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if !mu.mutate(es) {
				continue
			}
			mb := encodeEvents(t, es)
			if _, err := spec.CheckTraceReader(bytes.NewReader(mb)); err == nil {
				t.Errorf("%s with %s: accepted", name, mu.name)
			}
			if *writeTraces && (name == "scenario-bug661" || name == "scenario-truncated_voter") {
				if err := os.WriteFile(filepath.Join(dir, "mutated", name+"-"+mu.name+".ndjson"), mb, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestRandomizedHardStateLossTraces replays the traces of impl/raft's
// TestRandomizedHardStateLoss: a member whose hard state was lost traces
// nothing (it is outside the spec), and every step of the others must
// still be a step of the spec.
func TestRandomizedHardStateLossTraces(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		c, err := rafttest.RunRandom(rafttest.HardStateLossRandom(seed))
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
			continue
		}
		if err := spec.CheckTrace(c.Events); err != nil {
			t.Errorf("seed %d: spec.CheckTrace rejects the trace (%d events): %v", seed, len(c.Events), err)
		}
	}
}
