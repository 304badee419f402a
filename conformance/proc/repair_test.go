package proc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/client"
	"github.com/durableraft/durableraft/impl/client/clienttest"
	"github.com/durableraft/durableraft/impl/procs"
)

// The repair of TRUNCATED members from their peers (issue 18,
// docs/repair.md), with real processes: four raftd on 127.0.0.1 with
// their data on disk, writes acknowledged, two members' WALs damaged
// inside their durable prefixes while everything is stopped, so that they
// boot TRUNCATED: two voters are left, a quorum is three, and no leader
// can be elected to release them. raftd's --peer-repair (on by default)
// repairs them from the two CLEAN members without a leader and without an
// operator; the cluster then elects a leader and serves, and every
// acknowledged write is read back. Every node traces (--trace); the merged
// trace is a run of the spec with -repair.

// repairValue is write i's value: a marker to find its record on disk and
// 4 KiB of padding (a WAL segment of 4 MiB holds about a thousand).
func repairValue(i int) []byte {
	return append([]byte(fmt.Sprintf("rv-%d-", i)), bytes.Repeat([]byte{'x'}, 4000)...)
}

// damageWrite flips a byte of write i's record in node id's first WAL
// segment (the node is stopped; later records vouch for it, so recovery
// says TRUNCATED rather than a torn tail).
func damageWrite(t *testing.T, c *procs.Cluster, id, i int) {
	t.Helper()
	seg := filepath.Join(c.Node(id).DataDir, "wal", "seg-0000000000000001.wal")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, repairValue(i)[:40])
	if at < 0 {
		t.Fatalf("node %d: write %d's record not found in %s", id, i, seg)
	}
	b[at+20] ^= 0x10
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d: write %d's record damaged at offset %d of %s", id, i, at+20, filepath.Base(seg))
}

// repairRun is one cluster of the repair tests.
type repairRun struct {
	t        *testing.T
	c        *procs.Cluster
	out      string
	traceDir string
	acked    int // writes 0..acked-1 were acknowledged
}

func newRepairRun(t *testing.T, name string, args func(id int) []string) *repairRun {
	out, err := os.MkdirTemp("", "raftd-proc-repair-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	r := &repairRun{t: t, out: out, traceDir: filepath.Join(out, "trace")}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s", out)
			return
		}
		os.RemoveAll(out)
	})
	// Under marked votes (the default rule, docs/durable-raft.md) four
	// members all up elect a leader unanimously, two TRUNCATED ones
	// included, before any repair: these runs show the repair from peers,
	// so they take the rule before, under which nothing else frees them.
	common := []string{"--tick-ms", "20", "--request-timeout", "3s", "--wal-segment-bytes", "4194304", "--trace", r.traceDir,
		"--testing-bugs", "truncated-withholds-vote"}
	r.c, err = procs.New(procs.Config{Raftd: raftdBin, Dir: filepath.Join(out, "data"), Size: 4,
		Args: func(id int) []string { return append(slices.Clone(common), args(id)...) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.c.KillAll)
	return r
}

func (r *repairRun) put(eps []string, to int) {
	r.t.Helper()
	clienttest.PutKeys(r.t, eps, quietLog, r.acked, to, 16, repairValue)
	r.acked = to
}

func (r *repairRun) endpoints(ids ...int) []string {
	var eps []string
	for _, id := range ids {
		eps = append(eps, r.c.Node(id).ClientAddr)
	}
	return eps
}

// restartAndRepair starts every node (two of them TRUNCATED) and waits, in
// a bound, until a leader serves and every member is ELIGIBLE again; it
// checks the TRUNCATED members booted TRUNCATED and were released by their
// peers (their logs say so).
func (r *repairRun) restartAndRepair(truncated []int) {
	r.t.Helper()
	ctx := context.Background()
	start := time.Now()
	if err := r.c.StartAll(); err != nil {
		r.t.Fatal(err)
	}
	lead, err := r.c.Leader(ctx, leaderWait)
	if err != nil {
		r.t.Fatalf("no leader after the restart with %v TRUNCATED: %v (logs in %s)", truncated, err, r.out)
	}
	deadline := time.Now().Add(leaderWait)
	for _, id := range []int{1, 2, 3, 4} {
		for {
			st, err := r.c.Status(ctx, id)
			if err == nil && st.Fence == "ELIGIBLE" && st.NotServing == "" {
				break
			}
			if time.Now().After(deadline) {
				r.t.Fatalf("node %d not repaired within %v: %+v %v (logs in %s)", id, leaderWait, st, err, r.out)
			}
			time.Sleep(50 * time.Millisecond) // polling a condition with a bound
		}
	}
	r.t.Logf("a leader (node %d) and every member ELIGIBLE %v after the restart", lead, time.Since(start).Round(time.Millisecond))
	for _, id := range truncated {
		logb, err := os.ReadFile(r.c.Node(id).LogPath)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, want := range []string{"server: recovery says TRUNCATED", "replica: fence released"} {
			if !strings.Contains(string(logb), want) {
				r.t.Fatalf("node %d's log does not say %q (logs in %s)", id, want, r.out)
			}
		}
	}
}

// readBack reads every acknowledged write through the cluster, writes a
// last one, and compares the members' KV state hashes.
func (r *repairRun) readBack() {
	r.t.Helper()
	ctx := context.Background()
	cl, err := client.New(client.Config{Endpoints: r.c.Endpoints(), RequestTimeout: 10 * time.Second, Logger: quietLog})
	if err != nil {
		r.t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Put(ctx, []byte("after-repair"), []byte("x")); err != nil {
		r.t.Fatalf("a write after the repair: %v", err)
	}
	for i := 0; i < r.acked; i++ {
		got, _, found, err := cl.Get(ctx, clienttest.Key(i))
		if err != nil || !found || !bytes.Equal(got, repairValue(i)) {
			r.t.Fatalf("acknowledged write %d: found %v, %d bytes, %v", i, found, len(got), err)
		}
	}
	if d := compareHashesOf(ctx, r.c, []int{1, 2, 3, 4}); d != "" {
		r.t.Fatalf("the members' states differ after the repair: %s", d)
	}
	r.t.Logf("%d acknowledged writes read back; the four members' states hash alike", r.acked)
}

// TestProcessRepairTwoOfFour: issue 18's two TRUNCATED members of four
// (impl/raft testdata/four_nodes_truncated.txt, with real processes). 300
// writes acknowledged; all four stopped; two members' WALs damaged at an
// early write (their logs are cut there: they lost acknowledged entries);
// all four restarted. No leader can be elected until the TRUNCATED
// members are repaired by their peers; with --peer-repair (the default)
// the cluster serves again, every write is read back, the states agree,
// and the merged trace is accepted by the spec.
func TestProcessRepairTwoOfFour(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	r := newRepairRun(t, "two", func(int) []string { return nil })
	ctx := context.Background()
	if err := r.c.StartAll(); err != nil {
		t.Fatal(err)
	}
	lead, err := r.c.Leader(ctx, leaderWait)
	if err != nil {
		t.Fatal(err)
	}
	r.put(r.c.Endpoints(), 300)
	if err := r.c.StopAll(); err != nil {
		t.Fatal(err)
	}
	victims := []int{lead%4 + 1, (lead+1)%4 + 1}
	damageWrite(t, r.c, victims[0], 20)
	damageWrite(t, r.c, victims[1], 150)
	r.restartAndRepair(victims)
	r.readBack()
	if n := r.traceActions("HandleRepairResponse"); n < 2 {
		t.Fatalf("%d repair answers taken or counted in the traces: the TRUNCATED members were not repaired by their peers", n)
	}
	if err := r.c.StopAll(); err != nil {
		t.Fatal(err)
	}
	checkTraces(t, "repair-two-of-four", r.traceDir, r.out, false)
}

// TestProcessRepairBehindCompaction: issue 18's TRUNCATED member behind
// the compaction point, repaired by a peer's snapshot. Nodes 1 and 2
// snapshot every 200 entries and compact (4 MiB segments); 3 and 4 never
// do. Node 3 is stopped after 100 writes; the others take writes until
// nodes 1 and 2 have compacted their first segment away (node 3's whole
// log). All stopped; nodes 3 and 4 damaged at early writes (3 at write
// 20, 4 at write 150: both below the CLEAN members' compaction point);
// all restarted. No leader can be elected; each TRUNCATED member asks the
// CLEAN ones, gets a snapshot (the entries it lacks are compacted), then
// the entries after it, and is released; the cluster serves, every write
// is read back, and the merged trace (SendRepairSnapshot, the streamed
// install) is accepted by the spec.
func TestProcessRepairBehindCompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	r := newRepairRun(t, "snap", func(id int) []string {
		if id <= 2 {
			return []string{"--snapshot-entries", "200", "--snapshot-bytes", "0", "--snapshot-keep-entries", "10", "--snapshot-chunk-bytes", "65536"}
		}
		return []string{"--snapshot-entries", "0", "--snapshot-bytes", "0"}
	})
	ctx := context.Background()
	if err := r.c.StartAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.Leader(ctx, leaderWait); err != nil {
		t.Fatal(err)
	}
	r.put(r.c.Endpoints(), 100)
	if err := r.c.Stop(3); err != nil {
		t.Fatal(err)
	}
	up := r.endpoints(1, 2, 4)
	compacted := func() bool {
		for _, id := range []int{1, 2} {
			st, err := r.c.Status(ctx, id)
			if err != nil || st.Snapshot.FirstIndex <= 400 {
				return false
			}
		}
		return true
	}
	for r.acked < 8000 && !compacted() {
		r.put(up, r.acked+500)
	}
	if !compacted() {
		t.Fatalf("nodes 1 and 2 did not compact past index 400 in %d writes", r.acked)
	}
	for _, id := range []int{1, 2} {
		st, _ := r.c.Status(ctx, id)
		t.Logf("node %d: snapshot at %d, log from %d, after %d writes", id, st.Snapshot.Index, st.Snapshot.FirstIndex, r.acked)
	}
	if err := r.c.StopAll(); err != nil {
		t.Fatal(err)
	}
	damageWrite(t, r.c, 3, 20)
	damageWrite(t, r.c, 4, 150)
	r.restartAndRepair([]int{3, 4})
	for _, id := range []int{3, 4} {
		st, err := r.c.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Snapshot.Stats["installed"] < 1 {
			t.Fatalf("node %d was repaired without a snapshot: %+v", id, st.Snapshot)
		}
	}
	r.readBack()
	if err := r.c.StopAll(); err != nil {
		t.Fatal(err)
	}
	checkTraces(t, "repair-behind-compaction", r.traceDir, r.out, false)
	if n := r.traceActions("SendRepairSnapshot"); n < 2 {
		t.Fatalf("%d repair answers by snapshot in the traces, want one to each TRUNCATED member at least", n)
	}
}

// traceActions counts the events of an action in the run's trace files.
func (r *repairRun) traceActions(action string) int {
	r.t.Helper()
	files, err := filepath.Glob(filepath.Join(r.traceDir, "*.ndjson"))
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			r.t.Fatal(err)
		}
		n += bytes.Count(b, []byte(`"action":"`+action+`"`))
	}
	return n
}
