package server

import (
	"context"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
)

// TestSyncDelayBeyondElectionTimeout: with --wal-sync-ms above the
// election timeout a leader is still elected. It failed while the replica
// runtime submitted a hard state (term and vote) without hurrying the WAL:
// the vote waited out the group-commit delay like any batch, and no vote
// was durable (so none granted) before the candidate timed out again.
func TestSyncDelayBeyondElectionTimeout(t *testing.T) {
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
