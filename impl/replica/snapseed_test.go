package replica

import (
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// TestSeedMembers: three members seeded from one node's snapshot (a
// backup) boot by row B3 with the state restored, elect a leader, take
// writes, and agree; the records the leader ships after the seed verify
// against the seeded chain. A WAL that holds a log already is refused.
func TestSeedMembers(t *testing.T) {
	src := newCCluster(t, 1, SnapshotOptions{Entries: 1 << 30})
	src.elect(1)
	src.write(50)
	sm := src.nodes[1].sm
	write, err := sm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	index, term, hash := sm.index, sm.term, sm.hash

	c := &ccluster{t: t, nodes: map[raft.NodeID]*cnode{}, opts: SnapshotOptions{Entries: 20, KeepEntries: 5, ChunkBytes: 512},
		leaderTerms: map[uint64]raft.NodeID{}, ids: []raft.NodeID{1, 2, 3}}
	for _, id := range c.ids {
		nd := &cnode{id: id, disk: vfs.NewMemFS(vfs.MemConfig{Seed: uint64(id)})}
		c.nodes[id] = nd
		o := snapTestWAL
		o.Stepped, o.Logger = false, quiet
		if err := SeedMember(nd.disk, "/d/wal", "/d/snap", o, index, term, c.ids, write); err != nil {
			t.Fatal(err)
		}
		if err := c.boot(nd); err != nil {
			t.Fatal(err)
		}
		st := nd.r.Status()
		if st.SnapshotBoot != "B3" || st.Snapshot.Index != index || nd.sm.index != index || nd.sm.hash != hash || st.Verdict != "CLEAN" {
			t.Fatalf("n%d boots by %q, snapshot %+v, state at %d (hash %x), verdict %s", id, st.SnapshotBoot, st.Snapshot, nd.sm.index, nd.sm.hash, st.Verdict)
		}
	}
	c.elect(2)
	c.write(60)
	c.sameState()
	if n := c.nodes[3]; n.sm.index < index+60 || n.r.Status().Snapshots.Made == 0 {
		t.Fatalf("n3 at %d, snapshots %+v", n.sm.index, n.r.Status().Snapshots)
	}
	o := snapTestWAL
	o.Stepped, o.Logger = false, quiet
	c.crash(c.nodes[1])
	c.nodes[1].disk.Restart()
	err = SeedMember(c.nodes[1].disk, "/d/wal", "/d/other", o, index, term, c.ids, write)
	if err == nil || !strings.Contains(err.Error(), "already holds a log") {
		t.Fatalf("seeding over a log: %v", err)
	}
}
