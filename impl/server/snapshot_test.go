package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/client/clienttest"
	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
)

// statusOf reads a node's /v1/status.
func statusOf(t *testing.T, tc *testCluster, id raft.NodeID) StatusBody {
	t.Helper()
	var st StatusBody
	r := do(t, "GET", tc.url(id, "/v1/status"), "")
	if err := json.Unmarshal([]byte(r.body), &st); err != nil {
		t.Fatalf("status of %d: %d %s: %v", id, r.status, r.body, err)
	}
	return st
}

// value is key i's value: v-<i> and padding to pad bytes.
func snapValue(i, pad int) string {
	v := fmt.Sprintf("v-%d-", i)
	return v + strings.Repeat("x", max(0, pad-len(v)))
}

// writeKeys puts keys k-<from>..k-<to-1> (snapValue(i, pad)) through the Go
// client, 16 at a time.
func writeKeys(t *testing.T, tc *testCluster, from, to, pad int) {
	t.Helper()
	var eps []string
	for id := range tc.clients {
		eps = append(eps, tc.clients[id])
	}
	clienttest.PutKeys(t, eps, quiet, from, to, 16, func(i int) []byte { return []byte(snapValue(i, pad)) })
}

// TestSnapshotCatchUpKV: raftd's KV store is the snapshotter. A follower
// stopped through 3,000 writes (2 KiB values, 4 MiB segments) and compactions of the others comes
// back by a snapshot of the store and then the log; its store hashes as
// the leader's at the same applied index, without an election; a restart
// of the leader boots from its own snapshot (row B3) with the same state.
func TestSnapshotCatchUpKV(t *testing.T) {
	tc := newTestCluster(t, 3, func(c *Config) {
		c.Snapshot = SnapshotConfig{Entries: 500, KeepEntries: 50, ChunkBytes: 16 << 10}
		c.WALSegmentBytes = WALSegmentBytesMin
	})
	const pad = 2 << 10
	lead := tc.leader()
	f := lead%3 + 1
	writeKeys(t, tc, 0, 10, pad)
	tc.stop(f)
	writeKeys(t, tc, 10, 3000, pad)
	ls := statusOf(t, tc, lead)
	if ls.Snapshot.Index < 2500 || ls.Snapshot.FirstIndex < 1000 || ls.Snapshot.Stats["compactions"] < 1 {
		t.Fatalf("leader not compacting: %+v", ls.Snapshot)
	}
	term := ls.Term
	tc.start(f)
	deadline := time.Now().Add(30 * time.Second)
	var fs StatusBody
	for {
		ls, fs = statusOf(t, tc, lead), statusOf(t, tc, f)
		if fs.KV.AppliedIndex == ls.KV.AppliedIndex && fs.KV.Hash == ls.KV.Hash && fs.KV.AppliedIndex >= 3000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no catch-up within 30s: follower %+v %+v, leader %+v", fs.KV, fs.Snapshot, ls.KV)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a bound
	}
	if fs.Snapshot.Stats["installed"] < 1 || fs.Snapshot.FirstIndex <= 1 || fs.KV.Keys != 3000 {
		t.Fatalf("the follower caught up without a snapshot: %+v, %d keys", fs.Snapshot, fs.KV.Keys)
	}
	if ls.Term != term || fs.Term != term || ls.Role != raft.RoleLeader.String() {
		t.Fatalf("an election during the catch-up: term %d -> leader %d, follower %d (%s)", term, ls.Term, fs.Term, ls.Role)
	}
	if g := do(t, "GET", tc.url(f, "/v1/kv/k-02999?stale=1"), ""); g.status != 200 || g.body != snapValue(2999, pad) {
		t.Fatalf("read on the follower: %d %q", g.status, g.body)
	}
	// The leader restarts from its own newest snapshot and the log after it.
	hash := ls.KV.Hash
	tc.stop(lead)
	tc.start(lead)
	deadline = time.Now().Add(30 * time.Second)
	for {
		st := statusOf(t, tc, lead)
		if st.Snapshot.BootRow != "B3" || st.Snapshot.Index == 0 {
			t.Fatalf("restart: boot row %q, snapshot %+v", st.Snapshot.BootRow, st.Snapshot)
		}
		if st.KV.AppliedIndex >= ls.KV.AppliedIndex {
			if st.KV.AppliedIndex == ls.KV.AppliedIndex && st.KV.Hash != hash {
				t.Fatalf("restarted at %d with hash %s, was %s", st.KV.AppliedIndex, st.KV.Hash, hash)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted node never reached %d: %+v", ls.KV.AppliedIndex, st.KV)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a bound
	}
}

// newClusterAt is newTestCluster on the given data directories, with
// ports picked here, and prepare run before any node starts (restore).
func newClusterAt(t *testing.T, dirs map[raft.NodeID]string, edit func(*Config), prepare func(peers map[raft.NodeID]string)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, dirs: dirs, peers: map[raft.NodeID]string{}, clients: map[raft.NodeID]string{},
		nodes: map[raft.NodeID]*Node{}, edit: edit}
	for id := range dirs {
		p, c := listenAt(t, "127.0.0.1:0"), listenAt(t, "127.0.0.1:0")
		tc.peers[id], tc.clients[id] = p.Addr().String(), c.Addr().String()
		p.Close()
		c.Close()
	}
	prepare(tc.peers)
	for id := range dirs {
		tc.start(id)
	}
	t.Cleanup(tc.stopAll)
	return tc
}

// TestBackupRestore: a backup taken through a follower (forwarded, the
// whole stream relayed) after writes, a delete and compactions holds every
// acknowledged write; three members restored from it make a new cluster
// (another cluster id) that serves the same data, takes writes and agrees,
// also with --trace (tracing off for a boot from a snapshot without a
// trace prefix).
// A backup with one byte flipped, a directory that holds a node, and an
// empty store are refused, and nothing is written.
func TestBackupRestore(t *testing.T) {
	tc := newTestCluster(t, 3, func(c *Config) { c.Snapshot = SnapshotConfig{Entries: 100, KeepEntries: 10, ChunkBytes: 4096} })
	lead := tc.leader()
	writeKeys(t, tc, 0, 400, 100)
	if r := do(t, "DELETE", tc.url(lead, "/v1/kv/k-00007"), ""); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	fol := lead%3 + 1
	r := do(t, "GET", tc.url(fol, "/v1/backup"), "")
	if r.status != 200 || r.header.Get(headerForwarded) == "" {
		t.Fatalf("backup through a follower: %d %s", r.status, r.body)
	}
	got, err := VerifyBackup(strings.NewReader(r.body))
	if err != nil || got.Keys != 399 || got.Hash != r.header.Get(headerBackupHash) || fmt.Sprint(got.Index) != r.header.Get(headerIndex) {
		t.Fatalf("backup: %+v, %v; headers %v", got, err, r.header)
	}
	old := statusOf(t, tc, lead).ClusterID
	tc.stopAll()

	root := t.TempDir()
	file := filepath.Join(root, "backup")
	if err := os.WriteFile(file, []byte(r.body), 0o644); err != nil {
		t.Fatal(err)
	}
	flipped := []byte(r.body)
	flipped[len(flipped)/2] ^= 0x10
	bad := filepath.Join(root, "flipped")
	if err := os.WriteFile(bad, flipped, 0o644); err != nil {
		t.Fatal(err)
	}
	peers := map[raft.NodeID]string{1: "127.0.0.1:1", 2: "127.0.0.1:2", 3: "127.0.0.1:3"}
	if _, err := RestoreMember(RestoreConfig{ID: 1, DataDir: filepath.Join(root, "x"), Peers: peers, Backup: bad, Logger: quiet}); err == nil ||
		!strings.Contains(err.Error(), "not a good backup") {
		t.Fatalf("a flipped backup: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "x")); err == nil {
		t.Fatal("a refused restore wrote the directory")
	}
	if _, err := RestoreMember(RestoreConfig{ID: 1, DataDir: tc.dirs[1], Peers: peers, Backup: file, Logger: quiet}); err == nil ||
		!strings.Contains(err.Error(), "already holds a node") {
		t.Fatalf("a restore over a node: %v", err)
	}
	var empty strings.Builder
	if err := kv.NewStore(kv.Options{}).Snapshot(&empty); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "empty"), []byte(empty.String()), 0o644)
	if _, err := RestoreMember(RestoreConfig{ID: 1, DataDir: filepath.Join(root, "y"), Peers: peers, Backup: filepath.Join(root, "empty"), Logger: quiet}); err == nil ||
		!strings.Contains(err.Error(), "empty store") {
		t.Fatalf("an empty backup: %v", err)
	}

	dirs := map[raft.NodeID]string{}
	for id := raft.NodeID(1); id <= 3; id++ {
		dirs[id] = filepath.Join(root, fmt.Sprint(id))
	}
	// Traced: the restored snapshot carries no trace prefix, so the
	// nodes boot with tracing off (and say so) rather than not at all.
	traceDir := t.TempDir()
	nc := newClusterAt(t, dirs, func(c *Config) { c.TraceDir = traceDir }, func(peers map[raft.NodeID]string) {
		for id, dir := range dirs {
			res, err := RestoreMember(RestoreConfig{ID: id, DataDir: dir, Peers: peers, Backup: file, Logger: quiet})
			if err != nil || res.Index != got.Index || res.Keys != 399 || res.ClusterID == old {
				t.Fatalf("restore of %d: %+v, %v (old cluster %s)", id, res, err, old)
			}
		}
	})
	nl := nc.leader()
	for id := raft.NodeID(1); id <= 3; id++ {
		if st := statusOf(t, nc, id); st.Snapshot.BootRow != "B3" || st.Snapshot.Index != got.Index || st.Verdict != "CLEAN" {
			t.Fatalf("restored node %d: boot %q snapshot %+v verdict %s", id, st.Snapshot.BootRow, st.Snapshot, st.Verdict)
		}
	}
	for i := 0; i < 400; i++ {
		g := do(t, "GET", nc.url(nl, fmt.Sprintf("/v1/kv/k-%05d", i)), "")
		switch {
		case i == 7 && g.status != 404:
			t.Fatalf("the deleted key: %d %q", g.status, g.body)
		case i != 7 && (g.status != 200 || g.body != snapValue(i, 100)):
			t.Fatalf("key %d: %d %q", i, g.status, g.body)
		}
	}
	writeKeys(t, nc, 400, 450, 100)
	deadline := time.Now().Add(20 * time.Second)
	for {
		a, b, c := statusOf(t, nc, 1).KV, statusOf(t, nc, 2).KV, statusOf(t, nc, 3).KV
		same := func(x, y KVStatus) bool {
			return x.AppliedIndex == y.AppliedIndex && x.Hash == y.Hash && x.Keys == y.Keys
		}
		if a.Keys == 449 && same(a, b) && same(b, c) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restored cluster does not agree: %+v %+v %+v", a, b, c)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a bound
	}
}
