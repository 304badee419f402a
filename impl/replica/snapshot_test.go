package replica

import (
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// TestSnapshotCatchUpStepped: a follower down through 10,500 writes and
// ten compactions comes back by a snapshot streamed in chunks, then by
// the WAL's segments (the entries after the snapshot, far more than the
// leader's tail cache holds: read back from its segment files); its state
// machine equals the leader's, no election happens during the transfer,
// and each side's log is bounded.
func TestSnapshotCatchUpStepped(t *testing.T) {
	const writes, after = 10000, 500
	c := newCCluster(t, 3, SnapshotOptions{Entries: 1000, KeepEntries: 100, ChunkBytes: 2048, WindowChunks: 4})
	l := c.elect(1)
	c.write(20)
	f := c.nodes[3]
	c.crash(f)
	c.write(writes)
	snap := l.r.Status().Snapshot
	c.write(after)
	if st := l.r.Status(); st.Snapshot != snap || snap.Index < writes || l.w.FirstIndex() < snap.Index-200 {
		t.Fatalf("leader: snapshot %+v (was %+v), first index %d: not compacting", st.Snapshot, snap, l.w.FirstIndex())
	}
	_, term, _ := l.r.Leadership()
	terms := len(c.leaderTerms)
	// Count what reaches the follower after its restart: the snapshot's
	// chunks, then entries (with their WAL records) from the leader's log.
	var records, below uint64
	c.drop = func(m *Message) bool {
		if m.To == f.id && m.Type == raft.MsgApp {
			records += uint64(len(m.Records))
			if len(m.Entries) > 0 && m.Entries[0].Index <= snap.Index {
				below++
			}
		}
		return false
	}
	c.restart(f)
	c.tick(30)
	c.write(5)
	c.tick(5)
	c.sameState()
	if _, t2, _ := l.r.Leadership(); c.leader() != l || t2 != term || len(c.leaderTerms) != terms {
		t.Fatalf("an election during the catch-up: leader n%d term %d, leader terms %v", c.leader().id, t2, c.leaderTerms)
	}
	if fr := f.r.Status(); fr.HardState.Term != term {
		t.Fatalf("the follower's term moved: %d, leader's %d", fr.HardState.Term, term)
	}
	ss := f.r.Status().Snapshots
	if ss.Installed != 1 || f.sm.restores != 1 || c.chunks < 10 {
		t.Fatalf("follower: %+v, restores %d, %d chunks", ss, f.sm.restores, c.chunks)
	}
	if got := f.w.FirstIndex(); got != snap.Index+1 {
		t.Fatalf("follower's log starts at %d, want just after the snapshot %d", got, snap.Index)
	}
	// The entries after the snapshot came as records from the leader's
	// WAL: more than its tail cache holds, so read from segment files.
	if tail := uint64(snapTestWAL.TailCacheBytes / 32); records < after || records < 4*tail || below != 0 {
		t.Fatalf("follower got %d records after its restart (want >= %d, beyond the tail cache's ~%d); %d messages below the snapshot",
			records, after, tail, below)
	}
	if ls := l.r.Status().Snapshots; ls.TransfersDone != 1 || ls.ChunksSent < uint64(c.chunks) {
		t.Fatalf("leader: %+v", ls)
	}
	t.Logf("leader %+v first %d; follower %+v first %d; chunks %d, records streamed %d", l.r.Status().Snapshots, l.w.FirstIndex(), ss,
		f.w.FirstIndex(), c.chunks, records)
}
