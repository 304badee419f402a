package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/conformance/sim"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
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
		t.Errorf("seed %d (%d nodes): %s\n%s", o.Seed, o.N, strings.Join(s.Violations, "\n  "), drawCommand(o))
		return s
	}
	if o.Trace {
		if err := spec.CheckTrace(s.CheckableEvents()); err != nil {
			t.Errorf("seed %d (%d nodes): trace rejected by the spec: %v\n%s", o.Seed, o.N, err, drawCommand(o))
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
		{&a.SnapshotsMade, &b.SnapshotsMade}, {&a.Installs, &b.Installs}, {&a.Compactions, &b.Compactions},
		{&a.ChunksSent, &b.ChunksSent}, {&a.TransferRestarts, &b.TransferRestarts}, {&a.SnapshotRefused, &b.SnapshotRefused},
		{&a.Restores, &b.Restores}, {&a.SnapshotFlips, &b.SnapshotFlips}, {&a.StaleReports, &b.StaleReports},
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
	o.ReplicaLogs = os.Getenv("SIM_REPLICA_LOGS") != ""
	runSeed(t, o)
}

// drawCommand is the line a failing seed prints: the command that writes
// its trace (TestSimSeedTrace) and draws it (raftspec viz, docs/course.md).
func drawCommand(o sim.Options) string {
	env := fmt.Sprintf("SIM_TRACE_SEED=%d SIM_TRACE_FILE=/tmp/sim-%d.ndjson", o.Seed, o.Seed)
	if o.RuntimeBugs != 0 {
		env += " SIM_RUNTIME_BUGS=" + o.RuntimeBugs.String()
	}
	if o.CoreBugs != 0 {
		env += " SIM_CORE_BUGS=" + o.CoreBugs.String()
	}
	return fmt.Sprintf("  draw it: %s go test -count=1 -run '^TestSimSeedTrace$' ./conformance/ && bin/raftspec viz /tmp/sim-%d.ndjson > /tmp/sim-%d.html",
		env, o.Seed, o.Seed)
}

// parseRuntimeBugs parses replica bug switches by name.
func parseRuntimeBugs(s string) (replica.Bug, error) {
	var out replica.Bug
	for _, name := range strings.Split(s, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		found := false
		for _, b := range replica.AllBugs() {
			if b.String() == name {
				out |= b
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown runtime bug %q", name)
		}
	}
	return out, nil
}

// TestSimSeedTrace writes one seed's trace to SIM_TRACE_FILE
// (SIM_TRACE_SEED=S; SIM_RUNTIME_BUGS and SIM_CORE_BUGS switch bugs on, as
// a failing seed's message says).
func TestSimSeedTrace(t *testing.T) {
	v, path := os.Getenv("SIM_TRACE_SEED"), os.Getenv("SIM_TRACE_FILE")
	if v == "" || path == "" {
		t.Skip("SIM_TRACE_SEED or SIM_TRACE_FILE not set")
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	o := sim.Default(seed)
	if o.RuntimeBugs, err = parseRuntimeBugs(os.Getenv("SIM_RUNTIME_BUGS")); err != nil {
		t.Fatal(err)
	}
	if o.CoreBugs, err = raft.ParseBugs(os.Getenv("SIM_CORE_BUGS")); err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(o)
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

// caught runs one seed and reports whether something caught the run: a
// violated invariant or a trace the spec rejects.
func caught(o sim.Options) (bool, string, error) {
	s, err := sim.New(o)
	if err != nil {
		return false, "", err
	}
	if err := s.Run(); err != nil {
		return false, "", err
	}
	if len(s.Violations) > 0 {
		return true, s.Violations[0], nil
	}
	if err := spec.CheckTrace(s.CheckableEvents()); err != nil {
		return true, "trace rejected: " + err.Error(), nil
	}
	return false, "", nil
}

// TestRuntimeBugsCaught: every runtime bug switch is caught within a
// bounded number of seeds, alone or, where it is defence in depth, in the
// combination that docs/runtime.md names; by the check named (a prefix of
// the first violation, or "trace" for a rejected trace).
func TestRuntimeBugsCaught(t *testing.T) {
	const seedsMax = 300
	cases := []struct {
		runtime replica.Bug
		core    raft.Bug
		by      []string
	}{
		{runtime: replica.BugSendBeforePersist, by: []string{"PersistBeforeSend"}},
		// BugAdvanceLastTerm is defence in depth twice over: the runner reads
		// progress atomically just before it hands it in, and a
		// truncation's sync holds inputs, so no report from before a
		// truncation reaches the core; impl/replica's
		// TestStaleProgressAfterTruncation shows what it breaks when one
		// does.
		{runtime: replica.BugNoChainCheck, by: []string{"StateMachineSafety", "ByteIdentical", "trace"}},
	}
	for _, tc := range cases {
		name := tc.runtime.String()
		if tc.core != 0 {
			name += "+" + tc.core.String()
		}
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= seedsMax; seed++ {
				o := sim.Default(seed)
				o.RuntimeBugs, o.CoreBugs = tc.runtime, tc.core
				ok, why, err := caught(o)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					continue
				}
				for _, by := range tc.by {
					if strings.HasPrefix(why, by) {
						t.Logf("caught at seed %d: %.200s\n%s", seed, why, drawCommand(o))
						return
					}
				}
				t.Fatalf("seed %d caught, but not by %v: %.300s", seed, tc.by, why)
			}
			t.Fatalf("not caught in %d seeds", seedsMax)
		})
	}
}

// TestSimLongRun: one long run of the runtime under every fault with at
// least 20,000 acknowledged client writes, traced and checked against the
// spec (SIM_LONG=1; make sim-longrun). make test runs a short version.
func TestSimLongRun(t *testing.T) {
	o := sim.Default(20000)
	o.N, o.ProposeEvery, o.ReadEvery = 3, 2*time.Millisecond, 10*time.Millisecond
	o.PreVote, o.CheckQuorum, o.MsgEntriesMax, o.InflightMsgsMax = true, true, 64, 4
	o.Rates = sim.BaseRates
	o.Rates.FaultEvery = time.Second // every fault kind, less often: the cluster must also get work done
	want := 1000
	o.Duration = 3 * time.Second
	if os.Getenv("SIM_LONG") != "" {
		o.Duration, want = 150*time.Second, 20000
	}
	s := runSeed(t, o)
	if t.Failed() {
		return
	}
	if s.Counts.Acked < want {
		t.Fatalf("%d acknowledged writes, want at least %d: %+v", s.Counts.Acked, want, s.Counts)
	}
	t.Logf("%d acknowledged writes, %d trace events checked, counts %+v", s.Counts.Acked, len(s.CheckableEvents()), s.Counts)
}
