package conformance

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/durableraft/durableraft/conformance/sim"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

var writeSimTrace = flag.Bool("write-sim-trace", false, "rewrite tla/traces/impl/sim-snapshots-*.ndjson")

// snapshotSample is a short simulated run of three replicas with snapshots
// and compaction at small thresholds (2 KiB WAL segments), crashes, drops
// and partitions: a trace small enough for TLC and for the explorer's 8-bit
// model (raftspec viz) that installs snapshots and restarts from them.
func snapshotSample(seed uint64) sim.Options {
	o := sim.Default(seed)
	o.N, o.Duration, o.HealMax = 3, 900*time.Millisecond, 3*time.Second
	o.ProposeEvery, o.ReadEvery = 5*time.Millisecond, 0
	o.SegmentBytes = 2 << 10 // compaction within 255 entries: the explorer's 8-bit numbers (raftspec viz)
	o.Faults = sim.Faults{Crashes: true, Drops: true, Partitions: true}
	o.Snapshots = &replica.SnapshotOptions{Entries: 8, KeepEntries: 1, ChunkBytes: 128, WindowChunks: 2, ResendTicks: 3, AbortResends: 6}
	o.PeerRepair = false // no bit flips: nothing to repair; the kept trace (and TLC's config) stays without -repair
	return o
}

const snapshotSampleSeed = 9

// TestSimSnapshotTraceKept: the kept sample trace of a compacting,
// snapshotting cluster (tla/traces/impl/sim-snapshots-seed-009.ndjson, for
// TLC: tla/tlc.sh all) is what the simulator writes today; the spec accepts
// it; it sends, installs and restarts from snapshots; and with one
// InstallSnapshot's message changed (a prefix the leader never offered) both
// checkers reject it (the mutated copy under mutated/).
func TestSimSnapshotTraceKept(t *testing.T) {
	s, err := sim.New(snapshotSample(snapshotSampleSeed))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if len(s.Violations) > 0 || s.TraceCheckable >= 0 {
		t.Fatalf("violations %v, checkable %d", s.Violations, s.TraceCheckable)
	}
	seen := map[string]int{}
	for _, e := range s.Events {
		seen[e.Action]++
	}
	if seen["SendSnapshot"] == 0 || seen["InstallSnapshot"] == 0 || seen["CrashFromSnapshot"] == 0 {
		t.Fatalf("the sample takes no snapshot step: %v", seen)
	}
	b := encodeSim(t, s.Events)
	if err := spec.CheckTrace(s.Events); err != nil {
		t.Fatalf("the spec rejects the sample: %v", err)
	}
	mutated := append([]trace.Event(nil), s.Events...)
	for k := range mutated {
		if e := mutated[k]; e.Action == "InstallSnapshot" {
			m := *e.Msg
			m.Mprefix = append([]trace.Run(nil), m.Mprefix...)
			last := &m.Mprefix[len(m.Mprefix)-1]
			last.Values = append([]int(nil), last.Values...)
			last.Values[len(last.Values)-1] = last.Values[len(last.Values)-1]%4 + 1
			e.Msg = &m
			mutated[k] = e
			break
		}
	}
	mb := encodeSim(t, mutated)
	if err := spec.CheckTrace(mutated); err == nil {
		t.Fatal("a changed snapshot prefix is accepted")
	}
	dir := filepath.Join("..", "tla", "traces", "impl")
	name := "sim-snapshots-seed-009.ndjson"
	for path, data := range map[string][]byte{filepath.Join(dir, name): b, filepath.Join(dir, "mutated", "sim-snapshots-seed-009-wrong-prefix.ndjson"): mb} {
		if *writeSimTrace {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		kept, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(kept, data) {
			t.Errorf("%s differs from what the simulator writes now (run with -write-sim-trace): %v", path, err)
		}
	}
	t.Logf("%d events: %v", len(s.Events), seen)
}

func encodeSim(t *testing.T, es []trace.Event) []byte {
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
