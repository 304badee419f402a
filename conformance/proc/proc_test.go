package proc

import (
	"testing"
)

// TestProcessCluster: three raftd processes on the lossy file system,
// concurrent clients, the whole fault schedule: every acknowledged write
// present, the same state everywhere, the history linearizable.
func TestProcessCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	v := execute(t, scenario{name: "correct", clients: 12, seed: 1, nodeArgs: nodeArgs, faults: theSchedule()})
	if v.failed() {
		t.Fatalf("the run failed: %v", v)
	}
}

// TestProcessClusterCatchesBugs: the same run, with a bug switch of the
// core re-introducing what a durable rule prevents, must fail: an
// acknowledged write lost, or a history porcupine rejects. Each switch
// gets up to attemptsMax runs (different seeds); docs/raftd.md gives the
// measured rate.
func TestProcessClusterCatchesBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	const attemptsMax = 5
	for _, bug := range []struct {
		bugs     string
		nodeArgs func(id int) []string
	}{
		{"follower-acks-appended", nodeArgs},
		// The quiet writes (slowFirst) place the kill inside the slow
		// nodes' batching window: synced cluster, one round trip.
		{"self-counts-appended,no-voter-learned-floor", bugNodeArgs},
	} {
		bugs := bug.bugs
		t.Run(bugs, func(t *testing.T) {
			for attempt := 1; attempt <= attemptsMax; attempt++ {
				v := execute(t, scenario{name: "bug", expectFail: true, args: []string{"--testing-bugs", bugs}, clients: 12, seed: uint64(attempt) * 7919, nodeArgs: bug.nodeArgs, faults: theSchedule()})
				if v.failed() {
					t.Logf("caught at attempt %d: %v", attempt, v)
					return
				}
				t.Logf("attempt %d did not catch it: %v", attempt, v)
			}
			t.Fatalf("%s: %d runs passed: the real-process test does not catch the bug", bugs, attemptsMax)
		})
	}
}

// TestProcessBatchingWindow: every node with a 200 ms group-commit delay
// (--wal-sync-ms 200), so that a kill almost always lands while a batch
// waits unsynced; kill -9 of followers, leaders and the whole cluster the
// moment a write is acknowledged. (The tick is 100 ms, an election timeout
// 1-2 s: the replica runtime makes a vote wait out the group-commit delay,
// impl/server's TestSyncDelayBeyondElectionTimeout.) Every acknowledged
// write survives: an
// acknowledgment waits for the fdatasync on a majority, never for the
// batching window to end.
func TestProcessBatchingWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	v := execute(t, scenario{name: "window", clients: 8, seed: 3, args: []string{"--wal-sync-ms", "200", "--tick-ms", "100"}, faults: windowSchedule()})
	if v.failed() {
		t.Fatalf("the run failed: %v", v)
	}
}
