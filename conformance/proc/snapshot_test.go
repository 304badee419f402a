package proc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/client/clienttest"
	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/procs"
)

// snapArgs are the snapshot flags of the runs below: small thresholds and
// the smallest WAL segments, so that 10,000 writes compact several times.
var snapArgs = []string{"--testing-lossy-fs", "--tick-ms", "20", "--request-timeout", "3s", "--snapshot-entries", "2000",
	"--snapshot-keep-entries", "200", "--wal-segment-bytes", "4194304", "--snapshot-chunk-bytes", "65536"}

// putKeys writes keys k-<from>..k-<to-1> (1 KiB values) through the Go
// client, 16 at a time, and fails the test on any error.
func putKeys(t *testing.T, eps []string, from, to int) {
	t.Helper()
	clienttest.PutKeys(t, eps, quietLog, from, to, 16, snapValue)
}

func snapValue(i int) []byte {
	return append([]byte(fmt.Sprintf("v-%d-", i)), bytes.Repeat([]byte{'x'}, 1000)...)
}

// raftctl runs the raftctl binary.
func raftctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(raftctlBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("raftctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// storeOf reads a backup file into a store.
func storeOf(t *testing.T, path string) *kv.Store {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st := kv.NewStore(kv.Options{})
	if err := st.Restore(f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return st
}

// sameItems reports the first key where two stores differ ("" when their
// keys, values and revisions are the same).
func sameItems(a, b *kv.Store) string {
	type item struct {
		key, value string
		rev        uint64
	}
	list := func(st *kv.Store) []item {
		var out []item
		st.Range(func(k, v []byte, rev uint64) bool { out = append(out, item{string(k), string(v), rev}); return true })
		return out
	}
	x, y := list(a), list(b)
	for k := 0; k < min(len(x), len(y)); k++ {
		if x[k] != y[k] {
			return fmt.Sprintf("item %d: %q rev %d vs %q rev %d", k, x[k].key, x[k].rev, y[k].key, y[k].rev)
		}
	}
	if len(x) != len(y) {
		return fmt.Sprintf("%d keys vs %d", len(x), len(y))
	}
	return ""
}

// TestProcessSnapshotCatchUpAndBackup: three raftd processes with
// snapshots on. A follower killed (kill -9) stays down through 10,000
// writes and several compactions of the others, restarts, and catches up
// over TCP by a snapshot and then the log: its store hashes as the
// leader's at the same index, no election on the way. Then raftctl backup
// (through the follower), raftctl restore of three members of a new
// cluster on new ports, and the new cluster holds the same keys, values
// and revisions (a backup of it restored beside the first compares equal)
// and takes writes.
func TestProcessSnapshotCatchUpAndBackup(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	out, err := os.MkdirTemp("", "raftd-proc-snap-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s", out)
			return
		}
		os.RemoveAll(out)
	})
	traceDir := filepath.Join(out, "a-trace")
	c, err := procs.New(procs.Config{Raftd: raftdBin, Dir: filepath.Join(out, "a"), Size: 3,
		Args: func(int) []string { return append(slices.Clone(snapArgs), "--trace", traceDir) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.KillAll()
	ctx := context.Background()
	if err := c.StartAll(); err != nil {
		t.Fatal(err)
	}
	lead, err := c.Leader(ctx, leaderWait)
	if err != nil {
		t.Fatal(err)
	}
	fol := lead%3 + 1
	putKeys(t, c.Endpoints(), 0, 10)
	if err := c.Kill(fol); err != nil {
		t.Fatal(err)
	}
	var up []string
	for _, n := range c.Nodes {
		if n.ID != fol {
			up = append(up, n.ClientAddr)
		}
	}
	start := time.Now()
	putKeys(t, up, 10, 10010)
	t.Logf("10,000 writes with a follower down: %v", time.Since(start).Round(time.Millisecond))
	ls, err := c.Status(ctx, lead)
	if err != nil {
		t.Fatal(err)
	}
	if ls.Snapshot.Index < 8000 || ls.Snapshot.FirstIndex < 2000 || ls.Snapshot.Stats["compactions"] < 2 {
		t.Fatalf("the leader is not compacting: %+v", ls.Snapshot)
	}
	term := ls.Term
	if err := c.Start(fol); err != nil {
		t.Fatal(err)
	}
	var fs procs.Status
	start = time.Now()
	deadline := start.Add(60 * time.Second)
	for {
		ls, err1 := c.Status(ctx, lead)
		fs, err = c.Status(ctx, fol)
		if err == nil && err1 == nil && fs.KV.AppliedIndex == ls.KV.AppliedIndex && fs.KV.Hash == ls.KV.Hash && fs.KV.Keys == 10010 {
			if ls.Term != term || ls.Role != "Leader" || fs.Term != term {
				t.Fatalf("an election during the catch-up: term %d, then leader %d (%s), follower %d", term, ls.Term, ls.Role, fs.Term)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no catch-up within 60s: follower %+v %+v (%v), leader %+v (%v)", fs.KV, fs.Snapshot, err, ls.KV, err1)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a bound
	}
	if fs.Snapshot.Stats["installed"] < 1 || fs.Snapshot.FirstIndex <= 11 {
		t.Fatalf("the follower caught up without a snapshot: %+v", fs.Snapshot)
	}
	t.Logf("caught up in %v: %d chunks, %d bytes; leader snapshot at %d, log from %d", time.Since(start).Round(time.Millisecond),
		fs.Snapshot.Stats["chunks_received"], fs.Snapshot.Stats["bytes_received"], ls.Snapshot.Index, ls.Snapshot.FirstIndex)

	// Backup through the follower, restore into a new cluster.
	backup := filepath.Join(out, "backup.kv")
	if o := raftctl(t, "--endpoints", c.Node(fol).ClientAddr, "backup", backup); !strings.Contains(o, "10010 keys") {
		t.Fatalf("raftctl backup: %s", o)
	}
	if err := c.StopAll(); err != nil {
		t.Fatal(err)
	}
	// Traced: the catch-up run, its follower's boot from an installed
	// snapshot included, merged by clock, is a run of the spec.
	checkTraces(t, "snapshot", traceDir, out, false)
	nc, err := procs.New(procs.Config{Raftd: raftdBin, Dir: filepath.Join(out, "b"), Size: 3, Args: func(int) []string { return snapArgs }})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.KillAll()
	for _, n := range nc.Nodes {
		o := raftctl(t, "restore", "--id", fmt.Sprint(n.ID), "--data", n.DataDir, "--peers", nc.Peers(), "--wal-segment-bytes", "4194304", backup)
		if !strings.Contains(o, "10010 keys") {
			t.Fatalf("raftctl restore: %s", o)
		}
	}
	if err := nc.StartAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Leader(ctx, leaderWait); err != nil {
		t.Fatal(err)
	}
	putKeys(t, nc.Endpoints(), 10010, 10020)
	again := filepath.Join(out, "again.kv")
	raftctl(t, "--endpoints", strings.Join(nc.Endpoints(), ","), "backup", again)
	a, b := storeOf(t, backup), storeOf(t, again)
	if b.Len() != 10020 {
		t.Fatalf("the restored cluster holds %d keys", b.Len())
	}
	for i := 10010; i < 10020; i++ {
		if v, _, ok := b.Get([]byte(fmt.Sprintf("k-%05d", i))); !ok || !bytes.Equal(v, snapValue(i)) {
			t.Fatalf("the restored cluster lost write %d", i)
		}
	}
	// Without the new keys, the data is exactly the backup's.
	for i := 10010; i < 10020; i++ {
		data, _ := kv.Delete([]byte(fmt.Sprintf("k-%05d", i))).Marshal()
		b.Apply(b.AppliedIndex()+1, b.AppliedTerm(), data)
	}
	if d := sameItems(a, b); d != "" {
		t.Fatalf("the restored cluster's data differs from the backup's: %s", d)
	}
	for _, n := range nc.Nodes {
		st, err := nc.Status(ctx, n.ID)
		if err != nil || st.Snapshot.BootRow != "B3" {
			t.Fatalf("restored node %d: %+v %v", n.ID, st.Snapshot, err)
		}
	}
}
