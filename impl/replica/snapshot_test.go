package replica

import (
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// TestSnapshotCatchUpStepped: a follower down through many writes and
// compactions comes back by a snapshot streamed in chunks, then by the
// WAL's segments; its state machine equals the leader's, no election
// happens during the transfer, and each side's log is bounded.
func TestSnapshotCatchUpStepped(t *testing.T) {
	c := newCCluster(t, 3, SnapshotOptions{Entries: 100, KeepEntries: 10, ChunkBytes: 512, WindowChunks: 4})
	l := c.elect(1)
	c.write(20)
	f := c.nodes[3]
	c.crash(f)
	c.write(600)
	if st := l.r.Status(); st.Snapshot.Index < 500 || l.w.FirstIndex() < 300 {
		t.Fatalf("leader: snapshot %+v, first index %d: not compacting", st.Snapshot, l.w.FirstIndex())
	}
	_, term, _ := l.r.Leadership()
	c.restart(f)
	c.tick(30)
	c.write(5)
	c.tick(5)
	c.sameState()
	if _, t2, _ := l.r.Leadership(); c.leader() != l || t2 != term {
		t.Fatalf("leadership changed during the catch-up")
	}
	ss := f.r.Status().Snapshots
	if ss.Installed != 1 || f.sm.restores != 1 || c.chunks < 10 {
		t.Fatalf("follower: %+v, restores %d, %d chunks", ss, f.sm.restores, c.chunks)
	}
	if got := f.w.FirstIndex(); got < 500 {
		t.Fatalf("follower's log starts at %d: not after the snapshot", got)
	}
	if ls := l.r.Status().Snapshots; ls.TransfersDone != 1 || ls.ChunksSent < uint64(c.chunks) {
		t.Fatalf("leader: %+v", ls)
	}
	t.Logf("leader %+v first %d; follower %+v first %d; chunks %d", l.r.Status().Snapshots, l.w.FirstIndex(), ss, f.w.FirstIndex(), c.chunks)
	_ = raft.None
}
