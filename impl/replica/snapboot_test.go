package replica

import (
	"bytes"
	"math"
	"path"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// TestBootCasesExhaustive: every combination of the boot table's inputs
// matches exactly one row.
func TestBootCasesExhaustive(t *testing.T) {
	for _, have := range []bool{false, true} {
		for _, held := range []bool{false, true} {
			for _, compacted := range []bool{false, true} {
				n := 0
				for k := range bootCases {
					if bootCases[k].matches(have, held, compacted) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("have=%v held=%v compacted=%v matches %d rows", have, held, compacted, n)
				}
			}
		}
	}
}

func snapOpts() SnapshotOptions {
	return SnapshotOptions{Entries: 50, KeepEntries: 5, ChunkBytes: 256, WindowChunks: 3}
}

func (c *ccluster) files(n *cnode, prefix string) []string {
	names, err := n.disk.List("/d/snap")
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, name := range names {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out
}

// TestBootRowB3: a node that made snapshots and compacted restarts from
// its newest snapshot and replays the log after it: CLEAN, the state
// machine as it was.
func TestBootRowB3(t *testing.T) {
	c := newCCluster(t, 3, snapOpts())
	c.elect(1)
	c.write(130)
	n := c.nodes[2]
	if n.w.FirstIndex() == 1 {
		t.Fatal("not compacted")
	}
	s := n.r.Status().Snapshot
	c.crash(n)
	c.restart(n)
	st := n.r.Status()
	if st.SnapshotBoot != "B3" || st.Verdict != "CLEAN" || n.sm.restores != 1 || n.sm.index != s.Index {
		t.Fatalf("boot row %s verdict %s restores %d applied %d (snapshot %d)", st.SnapshotBoot, st.Verdict, n.sm.restores, n.sm.index, s.Index)
	}
	c.sameState()
}

// TestBootSnapshotSentinel is seed 000's edge: a member whose log is a
// snapshot with nothing after it, and which learned a commit index beyond
// it, is CLEAN, never TRUNCATED, and behind (boot policy row 5: fenced,
// catching up) if that learned commit came back; it catches up from the
// leader. Since issue 10 item 5 an install learns the leader's commit
// only up to the snapshot's index (what it proves), so n3 reboots with the
// old unclamped rule (raft.BugLearnedCommitUnclamped) to reach the edge.
func TestBootSnapshotSentinel(t *testing.T) {
	c := newCCluster(t, 3, snapOpts())
	c.elect(1)
	c.coreBugs = raft.BugLearnedCommitUnclamped
	f := c.nodes[3]
	c.crash(f)
	c.write(120)
	c.restart(f)
	// Only the snapshot reaches n3, no AppendEntries: its log stays empty
	// after the snapshot; the leader's commit index (beyond the snapshot,
	// learned with it) is its learned commit.
	c.drop = func(m *Message) bool { return m.To == 3 && m.Type == raft.MsgApp && len(m.Entries) > 0 }
	c.write(3)
	c.tick(20)
	st := f.r.Status()
	if st.Snapshots.Installed != 1 || f.w.LastIndex() != st.Snapshot.Index || st.HardState.LearnedCommit <= st.Snapshot.Index {
		t.Fatalf("setup: %+v last %d", st, f.w.LastIndex())
	}
	c.crash(f)
	c.restart(f)
	st = f.r.Status()
	// learnedCommit is not hard state (the window's production rule): the
	// install raised it in memory only, and the WAL keeps it with the next
	// hard state; the boot brings back that value or a lower one. Behind
	// it (row 5) the member is fenced; at or below the snapshot (row 1) it
	// is ELIGIBLE; TRUNCATED never.
	wantRow, wantFence := "1", raft.OutcomeEligible
	if st.HardState.LearnedCommit > st.Snapshot.Index {
		wantRow, wantFence = "5", raft.OutcomeFenced
	}
	if st.SnapshotBoot != "B3" || st.Verdict != "CLEAN" || st.FenceRow != wantRow || st.Fence != wantFence {
		t.Fatalf("sentinel boot: row %s verdict %s fence row %s %v (learned commit %d, snapshot %d)", st.SnapshotBoot, st.Verdict,
			st.FenceRow, st.Fence, st.HardState.LearnedCommit, st.Snapshot.Index)
	}
	c.drop = nil
	c.tick(10)
	c.write(2)
	if st = f.r.Status(); st.Fence != raft.OutcomeEligible {
		t.Fatalf("after catching up: %v row %s", st.Fence, st.FenceRow)
	}
	c.sameState()
}

// TestBootRowB2: the only snapshot under a compacted log is damaged: it is
// quarantined, the log reset, the member TRUNCATED (fenced); it fetches a
// good snapshot from the leader and catches up.
func TestBootRowB2(t *testing.T) {
	c := newCCluster(t, 3, snapOpts())
	c.elect(1)
	c.write(130)
	n := c.nodes[2]
	snaps := c.files(n, "snap-")
	if len(snaps) != 1 || n.w.FirstIndex() == 1 {
		t.Fatalf("setup: snapshots %v, first index %d", snaps, n.w.FirstIndex())
	}
	c.crash(n)
	if err := n.disk.FlipBit(path.Join("/d/snap", snaps[0]), 300, 3); err != nil {
		t.Fatal(err)
	}
	c.restart(n)
	st := n.r.Status()
	if st.SnapshotBoot != "B2" || st.Verdict != "TRUNCATED" || n.sm.index != 0 || len(c.files(n, "bad-")) != 1 {
		t.Fatalf("boot row %s verdict %s applied %d bad files %v", st.SnapshotBoot, st.Verdict, n.sm.index, c.files(n, "bad-"))
	}
	c.tick(20)
	c.write(3)
	c.sameState()
	if st = n.r.Status(); st.Snapshots.Installed != 1 || st.Verdict != "TRUNCATED" {
		t.Fatalf("after the catch-up: installed %d verdict %s", st.Snapshots.Installed, st.Verdict)
	}
	// The fence releases with a leader of a later term than the damage's
	// (spec FenceReleases).
	c.nodes[1].r.Handle(Event{Kind: EventTransfer, To: 3})
	c.tick(5)
	c.write(2)
	c.sameState()
	if st = n.r.Status(); st.Verdict != "CLEAN" {
		t.Fatalf("after the catch-up: installed %d verdict %s: %+v", st.Snapshots.Installed, st.Verdict, st.Status)
	}
}

// TestBootRowB4: damage cuts the log below the newest snapshot: the state
// machine restarts from the snapshot, the log after it, TRUNCATED.
func TestBootRowB4(t *testing.T) {
	c := newCCluster(t, 3, snapOpts())
	c.elect(1)
	c.write(130)
	n := c.nodes[2]
	s := n.r.Status().Snapshot
	first := n.w.FirstIndex()
	if first > s.Index || s.Index == 0 {
		t.Fatalf("setup: snapshot %+v, first %d", s, first)
	}
	recs, err := n.w.Records(first, first+1, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	c.crash(n)
	n.disk.Restart()
	flipped := false
	names, _ := n.disk.List("/d/wal")
	for _, name := range names {
		img, err := n.disk.ReadFile(path.Join("/d/wal", name))
		if err != nil || !strings.HasPrefix(name, "seg-") {
			continue
		}
		if off := bytes.Index(img, recs[0]); off >= 0 {
			if err := n.disk.FlipBit(path.Join("/d/wal", name), int64(off+40), 1); err != nil {
				t.Fatal(err)
			}
			flipped = true
		}
	}
	if !flipped {
		t.Fatalf("record %d not found on disk (%v)", first, names)
	}
	c.restart(n)
	st := n.r.Status()
	if st.SnapshotBoot != "B4" || st.Verdict != "TRUNCATED" || n.sm.index != s.Index || n.w.FirstIndex() != s.Index+1 {
		t.Fatalf("boot row %s verdict %s applied %d first %d (snapshot %d)", st.SnapshotBoot, st.Verdict, n.sm.index, n.w.FirstIndex(), s.Index)
	}
	c.tick(20)
	c.write(3)
	c.sameState()
}
