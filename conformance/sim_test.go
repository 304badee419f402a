package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/conformance/sim"
	"github.com/durableraft/durableraft/spec"
)

// seedRange reads a range "a-b" (or a single seed) from the environment
// variable name, or returns the default.
func seedRange(t *testing.T, name string, lo, hi uint64) (uint64, uint64) {
	v := os.Getenv(name)
	if v == "" {
		return lo, hi
	}
	a, b, ok := strings.Cut(v, "-")
	if !ok {
		b = a
	}
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || y < x {
		t.Fatalf("%s=%q: want a seed or a range a-b", name, v)
	}
	return x, y
}

// runSeed runs one seeded simulation and checks its invariants and its
// trace against the spec.
func runSeed(t *testing.T, o sim.Options) *sim.Sim {
	t.Helper()
	s, err := sim.New(o)
	if err != nil {
		t.Fatalf("seed %d: %v", o.Seed, err)
	}
	if err := s.Run(); err != nil {
		t.Fatalf("seed %d: %v", o.Seed, err)
	}
	if len(s.Violations) > 0 {
		t.Errorf("seed %d (%d nodes): %s", o.Seed, o.N, strings.Join(s.Violations, "\n  "))
		return s
	}
	if o.Trace {
		if err := spec.CheckTrace(s.CheckableEvents()); err != nil {
			t.Errorf("seed %d (%d nodes): trace rejected by the spec: %v", o.Seed, o.N, err)
		}
	}
	return s
}

// TestSimulatedRuntime runs the replica runtime in stepped mode, 3 to 5
// replicas over the real WAL on in-memory disks, with every fault on:
// no invariant may break and every trace must be a behaviour of the spec.
// SIM_SEEDS=a-b runs other seeds (docs/conformance.md).
func TestSimulatedRuntime(t *testing.T) {
	lo, hi := seedRange(t, "SIM_SEEDS", 1, 200)
	var total sim.Counts
	for seed := lo; seed <= hi; seed++ {
		s := runSeed(t, sim.Default(seed))
		addCounts(&total, s.Counts)
		if t.Failed() {
			break
		}
	}
	t.Logf("seeds %d-%d: %+v", lo, hi, total)
}

func addCounts(a *sim.Counts, b sim.Counts) {
	for _, p := range [][2]*int{
		{&a.Delivered, &b.Delivered}, {&a.Dropped, &b.Dropped}, {&a.Duplicated, &b.Duplicated},
		{&a.Proposals, &b.Proposals}, {&a.Acked, &b.Acked}, {&a.Reads, &b.Reads}, {&a.ReadsServed, &b.ReadsServed},
		{&a.Crashes, &b.Crashes}, {&a.IOCrashes, &b.IOCrashes}, {&a.Restarts, &b.Restarts}, {&a.Flips, &b.Flips},
		{&a.SyncErrors, &b.SyncErrors}, {&a.DiskFull, &b.DiskFull}, {&a.SlowSyncs, &b.SlowSyncs},
		{&a.Partitions, &b.Partitions}, {&a.LateNotifies, &b.LateNotifies}, {&a.WireFlips, &b.WireFlips}, {&a.Elections, &b.Elections},
		{&a.VerdictTruncated, &b.VerdictTruncated}, {&a.LostSteps, &b.LostSteps},
	} {
		*p[0] += *p[1]
	}
}

// TestDeterministicAcrossProcesses: a seed replays byte for byte: the same
// trace and disk images in two processes with different GOMAXPROCS.
func TestDeterministicAcrossProcesses(t *testing.T) {
	if seed := os.Getenv("SIM_FINGERPRINT_SEED"); seed != "" {
		n, err := strconv.ParseUint(seed, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		s, err := sim.New(sim.Default(n))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		fp, err := s.Fingerprint()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("fingerprint=%s events=%d\n", fp, len(s.Events))
		return
	}
	var got []string
	for _, procs := range []string{"1", "2"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDeterministicAcrossProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SIM_FINGERPRINT_SEED=7", "GOMAXPROCS="+procs)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child with GOMAXPROCS=%s: %v\n%s", procs, err, out)
		}
		line := ""
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "fingerprint=") {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("child printed no fingerprint:\n%s", out)
		}
		got = append(got, line)
	}
	if got[0] != got[1] {
		t.Fatalf("seed 7 differs across processes:\n  %s\n  %s", got[0], got[1])
	}
	t.Log(got[0])
}

// TestSimSeedLog prints one seed's run step by step (SIM_LOG_SEED=S).
func TestSimSeedLog(t *testing.T) {
	v := os.Getenv("SIM_LOG_SEED")
	if v == "" {
		t.Skip("SIM_LOG_SEED not set")
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Default(seed)
	o.Log = func(s string) { fmt.Println(s) }
	runSeed(t, o)
}

// TestSimSeedTrace writes one seed's trace to SIM_TRACE_FILE (SIM_TRACE_SEED=S).
func TestSimSeedTrace(t *testing.T) {
	v, path := os.Getenv("SIM_TRACE_SEED"), os.Getenv("SIM_TRACE_FILE")
	if v == "" || path == "" {
		t.Skip("SIM_TRACE_SEED or SIM_TRACE_FILE not set")
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Default(seed))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, e := range s.Events {
		b, _ := json.Marshal(e)
		f.Write(append(b, '\n'))
	}
}
