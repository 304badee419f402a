package replica

import (
	"path"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// behind makes n3 miss enough writes that it needs a snapshot, and returns
// it (down).
func behind(t *testing.T, opts SnapshotOptions) (*ccluster, *cnode) {
	t.Helper()
	c := newCCluster(t, 3, opts)
	c.elect(1)
	c.write(10)
	f := c.nodes[3]
	c.crash(f)
	c.write(200)
	return c, f
}

func xferOpts() SnapshotOptions {
	return SnapshotOptions{Entries: 60, KeepEntries: 5, ChunkBytes: 128, WindowChunks: 2, ResendTicks: 2, AbortResends: 3}
}

// TestInstallResumes: a transfer cut halfway (a partition, short and then
// long enough that the leader gives up and starts over) goes on from the
// follower's offset: every byte is written once.
func TestInstallResumes(t *testing.T) {
	for _, cut := range []int{4, 40} {
		c, f := behind(t, xferOpts())
		c.restart(f)
		data := 0
		c.drop = func(m *Message) bool {
			if m.Chunk != nil && m.Chunk.Kind == ChunkData && m.To == 3 {
				data++
				return data > 30
			}
			return false
		}
		c.tick(3)
		if f.r.Status().Snapshots.Installed != 0 || f.r.snaps.recv == nil || f.r.snaps.recv.have == 0 {
			t.Fatalf("cut %d: setup: the transfer did not stop halfway", cut)
		}
		half := f.r.snaps.recv.have
		c.drop = func(m *Message) bool { return m.To == 3 || m.From == 3 }
		c.tick(cut)
		c.drop = nil
		c.tick(20)
		c.sameState()
		ls, fs := c.leader().r.Status().Snapshots, f.r.Status().Snapshots
		size := c.fileSize(f, snapName(snapKindRecv, f.r.snaps.cur.Index, f.r.snaps.cur.Term))
		t.Logf("cut %d: halfway at %d bytes; leader %+v; follower received %d bytes of %d", cut, half, ls, fs.BytesReceived, size)
		if fs.Installed != 1 || fs.VerifyFailed != 0 || fs.BytesReceived != uint64(size) {
			t.Fatalf("cut %d: follower %+v for a file of %d bytes: not resumed", cut, fs, size)
		}
		if cut == 40 && ls.TransfersFailed == 0 {
			t.Fatalf("cut %d: the leader did not give up: %+v", cut, ls)
		}
	}
}

func (c *ccluster) fileSize(n *cnode, name string) int64 {
	f, err := n.disk.Open(path.Join("/d/snap", name))
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		c.t.Fatal(err)
	}
	return size
}

// TestInstallRestartsAfterFollowerCrash: a follower that crashes halfway
// through a transfer drops the part at boot and receives it again from 0.
func TestInstallRestartsAfterFollowerCrash(t *testing.T) {
	c, f := behind(t, xferOpts())
	c.restart(f)
	data := 0
	c.drop = func(m *Message) bool {
		if m.Chunk != nil && m.Chunk.Kind == ChunkData && m.To == 3 {
			data++
			return data > 20
		}
		return false
	}
	c.tick(2)
	if len(c.files(f, "part-")) != 1 {
		t.Fatalf("setup: part files %v", c.files(f, "part-"))
	}
	c.crash(f)
	c.drop = nil
	c.restart(f)
	if p := c.files(f, "part-"); len(p) != 0 {
		t.Fatalf("part files after boot: %v", p)
	}
	c.tick(20)
	c.sameState()
	if fs := f.r.Status().Snapshots; fs.Installed != 1 || f.sm.restores != 1 {
		t.Fatalf("follower %+v restores %d", fs, f.sm.restores)
	}
}

// TestInstallAcrossLeaderChange: the leader changes halfway through a
// transfer: the old one stops, the new one sends its own snapshot, the
// follower drops the part of the old one and installs the new one.
func TestInstallAcrossLeaderChange(t *testing.T) {
	c, f := behind(t, xferOpts())
	c.restart(f)
	data := 0
	c.drop = func(m *Message) bool {
		if m.Chunk != nil && m.Chunk.Kind == ChunkData && m.To == 3 && m.From == 1 {
			data++
			return data > 15
		}
		return false
	}
	c.tick(2)
	c.nodes[1].r.Handle(Event{Kind: EventTransfer, To: 2})
	c.tick(30)
	if l := c.leader(); l == nil || l.id != 2 {
		t.Fatalf("leader %v, want n2", l)
	}
	c.write(3)
	c.sameState()
	if fs := f.r.Status().Snapshots; fs.Installed != 1 || f.sm.restores != 1 {
		t.Fatalf("follower %+v restores %d", fs, f.sm.restores)
	}
	if ls := c.nodes[2].r.Status().Snapshots; ls.TransfersDone != 1 {
		t.Fatalf("new leader %+v", ls)
	}
}

// TestFlippedSnapshotRefused: a snapshot file with one byte flipped is
// refused with a clear error, nothing is applied from it, and a good one
// is fetched: (a) the leader's own file, found as it is read for sending
// (quarantined; a fresh snapshot is made and sent); (b) the follower's
// received file, found by its verification (removed; fetched again).
func TestFlippedSnapshotRefused(t *testing.T) {
	t.Run("leader's file", func(t *testing.T) {
		c, f := behind(t, xferOpts())
		l := c.leader()
		snaps := c.files(l, "snap-")
		if len(snaps) != 1 {
			t.Fatalf("leader's snapshots %v", snaps)
		}
		if err := l.disk.FlipBit(path.Join("/d/snap", snaps[0]), 700, 2); err != nil {
			t.Fatal(err)
		}
		c.restart(f)
		c.tick(20)
		c.write(2)
		c.sameState()
		ls, fs := l.r.Status().Snapshots, f.r.Status().Snapshots
		if ls.Quarantined != 1 || len(c.files(l, "bad-")) != 1 || fs.Installed != 1 || f.sm.restores != 1 || fs.VerifyFailed != 0 {
			t.Fatalf("leader %+v bad %v; follower %+v restores %d", ls, c.files(l, "bad-"), fs, f.sm.restores)
		}
	})
	t.Run("follower's file", func(t *testing.T) {
		c, f := behind(t, xferOpts())
		c.restart(f)
		flipped := false
		f.jobStep = func(j *Job) bool {
			if j.kind == jobVerify && j.next == 0 && !flipped {
				name := path.Join("/d/snap", snapName(snapKindPart, j.meta.Index, j.meta.Term))
				if err := f.disk.FlipBit(name, 500, 5); err != nil {
					t.Fatal(err)
				}
				flipped = true
			}
			return true
		}
		c.tick(20)
		c.write(2)
		c.sameState()
		fs, ls := f.r.Status().Snapshots, c.leader().r.Status().Snapshots
		if !flipped || fs.VerifyFailed != 1 || fs.Installed != 1 || f.sm.restores != 1 || ls.TransferRestarts != 1 {
			t.Fatalf("flipped %v; follower %+v restores %d; leader %+v", flipped, fs, f.sm.restores, ls)
		}
	})
}

// TestSnapshotCrashPoints: a crash at each point of making and installing
// a snapshot recovers: the files the boot removes, the row it takes, and
// the state machines equal after the catch-up.
func TestSnapshotCrashPoints(t *testing.T) {
	type point struct {
		name  string
		node  raft.NodeID
		kind  jobKind
		after int  // crash once this many steps ran (len(steps): before the job is handed back)
		back  bool // hand the job back first: crash once the core took the snapshot, before the reset is durable
		row   string
		gone  string // a file prefix the boot must have removed
	}
	points := []point{
		{"make: after the fdatasync, before the rename", 2, jobMake, 1, false, "B3", "tmp-"},
		{"make: after the rename, before the compaction", 2, jobMake, 2, false, "B3", "tmp-"},
		{"install: after the fdatasync, before the rename", 3, jobVerify, 1, false, "", "part-"},
		{"install: after the rename, before the core took it", 3, jobVerify, 2, false, "", "recv-"},
		{"install: after the core took it, before the reset is durable", 3, jobVerify, 2, true, "B1", "recv-"},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			c, f := behind(t, xferOpts())
			c.restart(f)
			n := c.nodes[p.node]
			crashed := false
			hook := func(j *Job) bool {
				if crashed || j.kind != p.kind || j.next < p.after {
					return true
				}
				crashed = true
				if p.back {
					n.r.Handle(Event{Kind: EventJob, Job: j})
					if !n.r.Status().Holding {
						t.Fatal("not holding for the reset after the install")
					}
				}
				c.crash(n)
				return false
			}
			if p.after < 2 {
				n.jobStep = hook
			} else {
				n.jobBack = hook
			}
			for k := 0; k < 40 && !crashed; k++ {
				c.write(1)
				c.tick(1)
			}
			if !crashed {
				t.Fatal("the crash point was never reached")
			}
			n.jobStep, n.jobBack = nil, nil
			c.restart(n)
			if got := c.files(n, p.gone); len(got) != 0 {
				t.Fatalf("after boot: %v", got)
			}
			if p.row != "" && n.r.Status().SnapshotBoot != p.row {
				t.Fatalf("boot row %s, want %s", n.r.Status().SnapshotBoot, p.row)
			}
			c.tick(20)
			c.write(2)
			c.sameState()
		})
	}
}

// TestTwoSendersDoNotRestartEachOther: two peers answering a repair
// request both stream a snapshot to the member. A chunk of the second,
// in the same term, is refused while the first transfer makes progress
// (each used to restart the other: the member never finished one); once
// the first stalls, the second takes over.
func TestTwoSendersDoNotRestartEachOther(t *testing.T) {
	opts := xferOpts()
	c, f := behind(t, opts)
	c.restart(f)
	data := 0
	c.drop = func(m *Message) bool {
		if m.Chunk != nil && m.Chunk.Kind == ChunkData && m.To == 3 {
			data++
			return data > 6
		}
		return false
	}
	c.tick(3)
	rv := f.r.snaps.recv
	if rv == nil || rv.have == 0 {
		t.Fatal("setup: no transfer in progress")
	}
	first, refused := rv.key, f.r.snaps.stats.ChunksRefused
	other := snapMessage(2, 3, rv.leaderTerm, rv.key.index+1, rv.key.term, SnapChunk{Kind: ChunkData, Size: rv.size + 7, Data: []byte("x")})
	f.r.recvChunk(&other)
	if got := f.r.snaps.recv; got == nil || got.key != first || f.r.snaps.stats.ChunksRefused != refused+1 {
		t.Fatalf("another sender's chunk in the same term: receiver %+v, refused %d (was %d); want the first transfer kept, the chunk refused",
			got, f.r.snaps.stats.ChunksRefused, refused)
	}
	f.r.snaps.recv.idle = 2 * opts.ResendTicks // the first one stalled
	f.r.recvChunk(&other)
	if got := f.r.snaps.recv; got == nil || got.key.from != 2 {
		t.Fatalf("after the first transfer stalled: receiver %+v, want the second sender's", got)
	}
}
