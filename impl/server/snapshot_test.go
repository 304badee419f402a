package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/client"
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
func value(i, pad int) string {
	v := fmt.Sprintf("v-%d-", i)
	return v + strings.Repeat("x", max(0, pad-len(v)))
}

// writeKeys puts keys k-<from>..k-<to-1> (value(i, pad)) through the Go
// client, workers at a time.
func writeKeys(t *testing.T, tc *testCluster, from, to, pad int) {
	t.Helper()
	var eps []string
	for id := range tc.clients {
		eps = append(eps, tc.clients[id])
	}
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.New(client.Config{Endpoints: eps, Logger: quiet, RequestTimeout: 20 * time.Second})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for i := from + w; i < to; i += workers {
				if _, err := c.Put(context.Background(), []byte(fmt.Sprintf("k-%05d", i)), []byte(value(i, pad))); err != nil {
					errs <- fmt.Errorf("put %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
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
	if g := do(t, "GET", tc.url(f, "/v1/kv/k-02999?stale=1"), ""); g.status != 200 || g.body != value(2999, pad) {
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
