package server

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
)

// TestSyncDelayBeyondElectionTimeout shows a liveness bug of the replica
// runtime (impl/replica, not this package's to change): a hard state
// (term and vote) is submitted to the WAL without SubmitSync, so it waits
// out wal.Options.SyncDelay like any batch; with --wal-sync-ms above the
// election timeout no vote is durable, so none is granted, before the
// candidate times out again, and no leader is ever elected. The fix is
// one line in processReady (hurry the hard state: hold on SubmitSync's
// ticket after SubmitHardState). Skipped unless RAFTD_SHOW_REPLICA_BUGS is
// set, so that make test stays green until the runtime is fixed.
func TestSyncDelayBeyondElectionTimeout(t *testing.T) {
	if os.Getenv("RAFTD_SHOW_REPLICA_BUGS") == "" {
		t.Skip("a known replica-runtime bug (see the comment); RAFTD_SHOW_REPLICA_BUGS=1 runs it")
	}
	tc := newTestCluster(t, 3, func(c *Config) { c.WALSyncDelay = time.Second })
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range tc.nodes {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := n.run.Status(ctx)
			cancel()
			if err == nil && st.Role == raft.RoleLeader {
				return
			}
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a bound
	}
	t.Fatal("no leader within 15s with a 1s group-commit delay and a 100-200ms election timeout")
}
