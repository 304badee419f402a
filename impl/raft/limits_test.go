package raft_test

import (
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/raft/rafttest"
)

// TestLimitSkewCommits: a rolling configuration change leaves the leader
// with large replication limits and its followers with small ones. The
// followers' limits bound what they send, not what they accept: the
// leader's batches (many entries, more bytes, entries larger than the
// followers' EntryBytesMax) are taken and commit. Before the receive bound
// was separated from the send limits, every batch was refused for ever.
func TestLimitSkewCommits(t *testing.T) {
	small := func(cfg *raft.Config) {
		if cfg.ID != 1 {
			cfg.MsgEntriesMax, cfg.MsgBytesMax, cfg.EntryBytesMax = 2, 64, 32
		}
	}
	c, err := rafttest.NewCluster(rafttest.Options{N: 3, Seed: 1, NodeConfig: small})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Campaign(1); err != nil {
		t.Fatal(err)
	}
	c.Stabilize(true, 100)
	var data []string
	for k := 0; k < 10; k++ {
		data = append(data, strings.Repeat(string(rune('a'+k)), 48)) // above the followers' EntryBytesMax
	}
	if err := c.Propose(1, data...); err != nil {
		t.Fatal(err)
	}
	c.Stabilize(true, 100)
	l := c.Node(1).Node.Status()
	if l.Last != 11 || l.Commit != 11 {
		t.Fatalf("leader last %d commit %d: the followers refused its batches (%s)", l.Last, l.Commit, c.Out.String())
	}
	c.Tick(1) // a heartbeat carries the commit index
	c.Stabilize(true, 100)
	for _, id := range []raft.NodeID{2, 3} {
		if st := c.Node(id).Node.Status(); st.Durable != 11 || st.Applied != 11 {
			t.Fatalf("n%d: %+v", id, st)
		}
	}
	// The other way round: a small-limit member leads and sends the entries
	// it holds, one per message (each is above its EntryBytesMax, two above
	// its MsgBytesMax), to n1, which a corruption cut back to one entry.
	c.Stop(1, 0)
	for r := 0; r < 40 && c.Leader() == nil; r++ {
		c.Tick(2)
		c.Tick(3)
		c.Stabilize(true, 100)
	}
	l2 := c.Leader()
	if l2 == nil {
		t.Fatal("no leader among the small-limit members")
	}
	if err := c.Corrupt(1, 1); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 20; r++ {
		c.Tick(l2.ID)
		c.Stabilize(true, 100)
	}
	if st, want := c.Node(1).Node.Status(), l2.Node.Status().Last; st.Durable != want || st.Commit != l2.Node.Status().Commit {
		t.Fatalf("n1 %+v, want durable %d from the small-limit leader", st, want)
	}
	if len(c.Violations) > 0 {
		t.Fatal(c.Violations)
	}
}
