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
	"github.com/durableraft/durableraft/impl/marks"
	"github.com/durableraft/durableraft/trace"
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

// runSeed runs one seeded simulation with every check (sim.Check: the
// invariants, the KV checks, porcupine, the spec's trace checker).
func runSeed(t *testing.T, o sim.Options) *sim.Sim {
	t.Helper()
	s, v, err := sim.Check(o)
	if err != nil {
		t.Fatalf("seed %d: %v", o.Seed, err)
	}
	if v.Violation != "" {
		t.Errorf("seed %d (%d nodes): %s\n%s", o.Seed, o.N, v.Violation, drawCommand(o))
	}
	return s
}

// TestSimulatedRuntime runs the replica runtime in stepped mode, 3 to 5
// replicas over the real WAL on in-memory disks, with every fault on:
// no invariant may break and every trace must be a behaviour of the spec.
// Across the seeds every fault kind strikes and every coverage mark of
// impl/ (impl/marks) is hit: a path no seed reaches is a path no check
// covers. SIM_SEEDS=a-b runs other seeds (docs/raftsim.md), without the
// coverage requirement.
func TestSimulatedRuntime(t *testing.T) {
	const lo0, hi0 = 1, 200
	lo, hi := seedRange(t, "SIM_SEEDS", lo0, hi0)
	marks.Enable(true)
	marks.Reset()
	defer marks.Enable(false)
	var total sim.Counts
	nodes := map[int]int{}
	for seed := lo; seed <= hi; seed++ {
		o := sim.Default(seed)
		nodes[o.N]++
		s := runSeed(t, o)
		addCounts(&total, s.Counts)
		if t.Failed() {
			break
		}
	}
	t.Logf("seeds %d-%d (clusters of 3, 4, 5 nodes: %d, %d, %d): %+v", lo, hi, nodes[3], nodes[4], nodes[5], total)
	var hit []string
	for _, m := range marks.All() {
		hit = append(hit, fmt.Sprintf("%s %d", m.Name(), m.Count()))
	}
	t.Logf("coverage marks:\n  %s", strings.Join(hit, "\n  "))
	if t.Failed() || lo != lo0 || hi != hi0 {
		return
	}
	for what, n := range map[string]int{"snapshot made": total.SnapshotsMade, "compaction": total.Compactions, "snapshot installed": total.Installs,
		"state machine restored": total.Restores, "snapshot transfer restarted": total.TransferRestarts, "snapshot file refused": total.SnapshotRefused} {
		if n == 0 {
			t.Errorf("no %s in seeds %d-%d", what, lo, hi)
		}
	}
	for _, f := range total.Faults() {
		if f.N == 0 {
			t.Errorf("fault kind %s never struck in seeds %d-%d", f.Kind, lo, hi)
		}
	}
	for _, m := range marks.All() {
		if m.Count() == 0 {
			t.Errorf("coverage mark %s never hit in seeds %d-%d (%s)", m.Name(), lo, hi, m.What())
		}
	}
}

func addCounts(a *sim.Counts, b sim.Counts) { a.Add(b) }

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
	if o.PeerRepair {
		env += " SIM_REPAIR=1" // sim.RepairOptions
	}
	if b := (sim.Bugs{Core: o.CoreBugs, Runtime: o.RuntimeBugs, KV: o.KVBugs, Server: o.ServerBugs}).String(); b != "" {
		env += " SIM_BUGS=" + b
	}
	return fmt.Sprintf("  draw it: %s go test -count=1 -run '^TestSimSeedTrace$' ./conformance/ && bin/raftspec viz /tmp/sim-%d.ndjson > /tmp/sim-%d.html",
		env, o.Seed, o.Seed)
}

// TestSimSeedTrace writes one seed's trace to SIM_TRACE_FILE
// (SIM_TRACE_SEED=S; SIM_BUGS switches bugs of any layer on, as a failing
// seed's message says; SIM_RUNTIME_BUGS and SIM_CORE_BUGS are read too;
// SIM_REPAIR=1 runs sim.RepairOptions rather than sim.Default).
// raftsim -seed S -trace F does the same for sim.Default's options.
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
	if os.Getenv("SIM_REPAIR") != "" {
		o = sim.RepairOptions(seed)
	}
	bugs, err := sim.ParseBugs(os.Getenv("SIM_BUGS") + "," + os.Getenv("SIM_RUNTIME_BUGS") + "," + os.Getenv("SIM_CORE_BUGS"))
	if err != nil {
		t.Fatal(err)
	}
	bugs.Apply(&o)
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
// violated invariant, a history porcupine rejects, or a trace the spec
// rejects.
func caught(o sim.Options) (bool, string, error) {
	_, v, err := sim.Check(o)
	if err != nil {
		return false, "", err
	}
	return v.Violation != "", v.Violation, nil
}

// TestBugCatalogue: every catalogued bug (sim.Catalogue: the core's, the
// runtime's, the KV store's and the service's switches, alone or in the
// combination where one is defence in depth) is caught within its bound of
// seeds, by one of the checks its row names; the log says how many seeds
// it took (docs/raftsim.md). A row the simulator is not required to
// catch runs CATALOGUE_SEEDS seeds (default 20) and says what happened.
func TestBugCatalogue(t *testing.T) {
	uncaught := uint64(20)
	if v := os.Getenv("CATALOGUE_SEEDS"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		uncaught = n
	}
	for _, row := range sim.Catalogue {
		t.Run(row.Name, func(t *testing.T) {
			if row.Pending != "" {
				t.Skipf("pending: %s", row.Pending)
			}
			bound := row.SeedsMax
			if bound == 0 {
				bound = uncaught
			}
			for seed := uint64(1); seed <= bound; seed++ {
				o := row.Options(seed)
				ok, why, err := caught(o)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					continue
				}
				if row.SeedsMax == 0 {
					t.Logf("caught at seed %d although not required: %.300s", seed, why)
					return
				}
				for _, by := range row.By {
					if strings.HasPrefix(why, by) {
						t.Logf("caught at seed %d (%d seeds): %.300s\n%s", seed, seed, why, drawCommand(o))
						return
					}
				}
				t.Fatalf("seed %d caught, but not by %v: %.300s", seed, row.By, why)
			}
			if row.SeedsMax == 0 {
				t.Logf("not caught in %d seeds, as expected: %s", bound, row.Why)
				return
			}
			t.Fatalf("not caught in %d seeds", bound)
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
	// Enough clients to offer that load (each has Pipeline operations in
	// flight at most), over enough keys to keep porcupine's partitions
	// small, retrying long enough that outcomes are rarely unknown
	// (porcupine's search grows with the unknown writes of a partition).
	o.Clients, o.Pipeline, o.Keys = 48, 4, 64
	o.OpTimeout, o.SessionTimeout = 10*time.Second, 10*time.Second
	// The clients wait out every outage (an operation in flight when the
	// leader goes is answered only after an attempt timeout), so 3 s with
	// an election at the start and a fault or two acknowledge about 800.
	want := 500
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

// TestSimulatedMembership runs sim.MembershipOptions: five replicas of
// which three start as the cluster, the leader asked for single-server
// changes (add a learner, promote it once it caught up, remove a member)
// under every fault but bit flips, with every check of TestSimulatedRuntime
// (AckedDurable counting the voters of the configuration an entry was
// committed in; the end checks leaving removed members out) and the spec's
// trace checker with membership. SIM_MEMBERSHIP_SEEDS=a-b runs others.
func TestSimulatedMembership(t *testing.T) {
	lo, hi := seedRange(t, "SIM_MEMBERSHIP_SEEDS", 1, 40)
	if testing.Short() {
		hi = lo + 9
	}
	var total sim.Counts
	for seed := lo; seed <= hi; seed++ {
		s := runSeed(t, sim.MembershipOptions(seed))
		addCounts(&total, s.Counts)
		if t.Failed() {
			break
		}
	}
	t.Logf("seeds %d-%d: %d membership changes applied, %d acknowledged writes, %d crashes", lo, hi, total.ConfigChanges, total.Acked, total.PowerLosses+total.IOCrashes)
	if !t.Failed() && total.ConfigChanges < int(hi-lo+1) {
		t.Errorf("%d membership changes applied in %d seeds", total.ConfigChanges, hi-lo+1)
	}
}

// TestSimulatedRepair runs four replicas with the repair from peers
// (sim.RepairOptions: raft.Config.PeerRepair, bit flips on up to two
// members at once) under every other fault: no invariant breaks, every
// trace is a behaviour of the spec with -repair, and across the seeds two
// members are TRUNCATED at once and members are repaired by their peers.
func TestSimulatedRepair(t *testing.T) {
	lo, hi := seedRange(t, "SIM_REPAIR_SEEDS", 1, 12)
	if testing.Short() {
		hi = lo + 3
	}
	twoAtOnce, released := 0, 0
	for seed := lo; seed <= hi; seed++ {
		s := runSeed(t, sim.RepairOptions(seed))
		two, rel := repairSeen(s.Events)
		if two {
			twoAtOnce++
		}
		released += rel
		if t.Failed() {
			break
		}
	}
	t.Logf("seeds %d-%d: %d with two members TRUNCATED at once, %d releases by peers", lo, hi, twoAtOnce, released)
	if !t.Failed() && (twoAtOnce == 0 || released == 0) {
		t.Errorf("seeds %d-%d: %d with two TRUNCATED at once, %d releases by peers: the repair is not exercised", lo, hi, twoAtOnce, released)
	}
}

// repairSeen reads a run's trace: whether two members were TRUNCATED at
// once, and how many were released by their peers' answers.
func repairSeen(events []trace.Event) (two bool, released int) {
	truncated := map[string]bool{}
	for _, e := range events {
		if e.State == nil {
			continue
		}
		was := truncated[e.Node]
		truncated[e.Node] = e.State.Verdict == "TRUNCATED"
		if was && !truncated[e.Node] && e.Action == "HandleRepairResponse" {
			released++
		}
		k := 0
		for _, v := range truncated {
			if v {
				k++
			}
		}
		two = two || k >= 2
	}
	return two, released
}
