package coretrace

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path"
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
var keptScenarios = []string{"bug661", "truncated_voter", "boot_policy", "conflict_batching", "wal_failure",
	"membership", "repair/three_nodes_one_peer"}

const keptSeeds = 3

func implTraceDir() string { return filepath.Join("..", "..", "tla", "traces", "impl") }

// keptTraces runs what tla/traces/impl/ holds.
func keptTraces(t *testing.T) map[string][]trace.Event {
	t.Helper()
	out := map[string][]trace.Event{}
	for _, name := range keptScenarios {
		res := runScript(t, filepath.Join(scriptDir, name+".txt"), 0)
		// a script of a subdirectory (repair/) has its trace in one of the
		// same name: viz draws tla/traces/impl/*.ndjson only, and cannot
		// draw a repair answer logged by its tip yet.
		d, base := path.Split(name)
		out[d+"scenario-"+base] = res.Cluster.Events
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
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
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
		if name == keptRepairMutated {
			keptRepairMutations(t, dir, name, b)
		}
	}
}

// keptRepairMutated is the kept trace whose repair mutations (repair_test.go)
// are kept in mutated/ too, for TLC to reject.
const keptRepairMutated = "repair/scenario-three_nodes_one_peer"

// keptRepairMutations checks that spec.CheckTraceReader rejects each repair
// mutation of the kept trace b, and with -write-impl-traces writes them.
func keptRepairMutations(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	for _, mu := range repairMutations {
		es, err := trace.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if mu.mutate(es) < 0 {
			t.Errorf("%s: nothing to mutate (%s)", name, mu.what)
			continue
		}
		mb := encodeEvents(t, es)
		if _, err := spec.CheckTraceReader(bytes.NewReader(mb)); err == nil {
			t.Errorf("%s with %s: accepted", name, mu.name)
		}
		path := filepath.Join(dir, filepath.Dir(name), "mutated", filepath.Base(name)+"-"+mu.name+".ndjson")
		if *writeTraces {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, mb, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if kept, err := os.ReadFile(path); err != nil || !bytes.Equal(kept, mb) {
			t.Errorf("%s differs from what the core writes now (run with -write-impl-traces): %v", path, err)
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

// TestRandomizedMembershipTraces replays the traces of impl/raft's
// TestRandomizedMembership (five nodes, three initial voters, random
// single-server changes under faults): every ChangeConfig, every step in a
// changed configuration, must be a step of the spec with membership. One
// trace with a change mutated into a two-server change, and one with the
// change logged for another server, must be rejected.
func TestRandomizedMembershipTraces(t *testing.T) {
	seeds := 120
	if testing.Short() {
		seeds = 20
	}
	events, changes := 0, 0
	var sample []trace.Event
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		c, err := rafttest.RunRandom(rafttest.MembershipRandom(seed))
		if err != nil {
			t.Errorf("seed %d: %v", seed, err)
			continue
		}
		if err := spec.CheckTrace(c.Events); err != nil {
			t.Errorf("seed %d: spec.CheckTrace rejects the trace (%d events): %v", seed, len(c.Events), err)
		}
		events, changes = events+len(c.Events), changes+c.ConfigChanges
		if sample == nil && c.ConfigChanges > 0 {
			sample = c.Events
		}
	}
	t.Logf("%d seeds, %d events, %d configuration changes, all traces accepted", seeds, events, changes)
	if sample == nil {
		t.Fatal("no run changed its configuration")
	}
	for _, mu := range membershipMutations {
		es, err := trace.Decode(bytes.NewReader(encodeEvents(t, sample)))
		if err != nil {
			t.Fatal(err)
		}
		if !mu.mutate(es) {
			t.Fatalf("%s: nothing to mutate", mu.name)
		}
		if err := spec.CheckTrace(es); err == nil {
			t.Errorf("a trace with %s (%s) is accepted", mu.name, mu.what)
		}
	}
}

var membershipMutations = []struct {
	name, what string
	mutate     func(es []trace.Event) bool
}{
	{"two-server-change", "the first ChangeConfig also makes a non-member a learner", func(es []trace.Event) bool {
		return mutateFirst(es, func(e *trace.Event) bool { return e.Action == "ChangeConfig" }, func(e *trace.Event) {
			v := *e.Value
			code, p := v-spec.ConfigValueBase, 1
			for k := 0; k < spec.MaxServers; k++ {
				if code/p%3 == 0 && es[0].Config.Names[min(k, len(es[0].Config.Names)-1)] != e.Peer {
					v += p
					break
				}
				p *= 3
			}
			*e.Value = v
			runs := e.State.LogAppend
			last := &runs[len(runs)-1]
			last.Values[len(last.Values)-1] = v
		})
	}},
	{"wrong-peer", "the first ChangeConfig names another server as the one changed", func(es []trace.Event) bool {
		return mutateFirst(es, func(e *trace.Event) bool { return e.Action == "ChangeConfig" }, func(e *trace.Event) {
			for _, n := range es[0].Config.Names {
				if n != e.Peer {
					e.Peer = n
					return
				}
			}
		})
	}},
}
