package sim

import (
	"bytes"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
)

// The fault schedule: every few milliseconds of virtual time one fault of
// an enabled kind strikes a random node. Each kind stays inside the budget
// the protocol promises to survive (docs/raftsim.md):
//   - crashes, sync errors, a full disk: any node, any number (the cluster
//     is unavailable while a quorum is down, and must recover at heal);
//   - bit flips at rest: in durable records other than the last synced
//     batch, on at most |Server| - quorum members at once (TRUNCATED members
//     grant no vote, so a quorum of voters must remain to repair them; with
//     PeerRepair any set that is not a quorum: repair.go).

func (s *Sim) startFaults() {
	s.at(s.randDur(time.Millisecond, 20*time.Millisecond), s.faultLoop)
}

func (s *Sim) faultsOff() { s.healing = true }

type faultKind func(s *Sim)

func (s *Sim) faultLoop() {
	if s.healing {
		return
	}
	f := s.opts.Faults
	var kinds []faultKind
	if f.Crashes {
		kinds = append(kinds, (*Sim).faultCrash, (*Sim).faultIOCrash)
	}
	if f.Partitions {
		kinds = append(kinds, (*Sim).faultPartition)
	}
	if f.Flips {
		kinds = append(kinds, (*Sim).faultFlip)
	}
	if f.SyncErrors {
		kinds = append(kinds, (*Sim).faultSyncError)
	}
	if f.DiskFull {
		kinds = append(kinds, (*Sim).faultDiskFull)
	}
	if f.ClusterPowerLoss {
		kinds = append(kinds, (*Sim).faultClusterPowerLoss)
	}
	if s.opts.Membership {
		kinds = append(kinds, (*Sim).faultMembership, (*Sim).faultMembership)
	}
	if len(kinds) == 0 {
		return
	}
	kinds[s.rng.IntN(len(kinds))](s)
	s.at(s.randDur(0, 2*s.opts.Rates.FaultEvery), s.faultLoop)
}

func (s *Sim) randomUp() *Node {
	var up []*Node
	for _, n := range s.Nodes {
		if n.r != nil {
			up = append(up, n)
		}
	}
	if len(up) == 0 {
		return nil
	}
	return up[s.rng.IntN(len(up))]
}

// faultCrash: a power loss now.
func (s *Sim) faultCrash() {
	if n := s.randomUp(); n != nil {
		s.Counts.PowerLosses++
		n.crash("power loss")
	}
}

// faultIOCrash: a power loss at one of the next I/O operations of a node's
// disk (inside a batch write, an fdatasync, a segment rotation, a
// hard-state write, whatever comes).
func (s *Sim) faultIOCrash() {
	if n := s.randomUp(); n != nil {
		n.ioCrash(1 + s.rng.Uint64N(24))
	}
}

// ioCrash arms a power loss at the node's k-th next I/O operation.
func (n *Node) ioCrash(k uint64) {
	if n.r != nil && n.canCrash() {
		n.disk.CrashAtOp(n.disk.Ops() + k)
		n.faultsArmed = true
	}
}

// faultPartition: isolate a node, cut one direction of a link, or heal.
func (s *Sim) faultPartition() {
	a := raft.NodeID(1 + s.rng.IntN(len(s.Nodes)))
	b := raft.NodeID(1 + s.rng.IntN(len(s.Nodes)))
	s.partition(s.rng.IntN(4), a, b)
}

// partition: 0 isolates a, 1 cuts the link a→b, 2 heals the network, 3
// stalls the link a→b (it holds its messages until the network heals).
func (s *Sim) partition(kind int, a, b raft.NodeID) {
	s.Counts.Partitions++
	switch kind {
	case 3:
		if a != b {
			s.net.stall(a, b)
		}
	case 0:
		s.net.isolate(a)
	case 1:
		if a != b {
			s.net.cut(a, b)
		}
	default:
		s.net.heal()
	}
}

// segmentFiles lists a node's live segment files, newest last.
func (n *Node) segmentFiles() []string {
	names, err := n.disk.List(dataDir)
	if err != nil {
		return nil
	}
	var segs []string
	for _, name := range names {
		if strings.HasPrefix(name, "seg-") {
			segs = append(segs, path.Join(dataDir, name))
		}
	}
	slices.Sort(segs)
	return segs
}

// faultSyncError: the next fdatasync of the active segment (or of the
// hard-state file) fails with EIO.
func (s *Sim) faultSyncError() {
	if n := s.randomUp(); n != nil {
		n.syncError(!s.chance(0.8))
	}
}

// syncError arms an EIO at the next fdatasync of the node's active segment
// (or of its hard-state file).
func (n *Node) syncError(hardState bool) {
	s := n.s
	if n.r == nil || !n.canCrash() {
		return
	}
	name := path.Join(dataDir, "hardstate")
	if segs := n.segmentFiles(); len(segs) > 0 && !hardState {
		name = segs[len(segs)-1]
	}
	if err := n.disk.FailSync(name); err == nil {
		s.Counts.SyncErrors++
		n.faultsArmed = true
	}
}

// faultDiskFull: the disk fills up (segments are preallocated, so this
// strikes at the next segment or spare creation).
func (s *Sim) faultDiskFull() {
	if n := s.randomUp(); n != nil {
		n.fillDisk()
	}
}

// fillDisk fills the node's disk for 10-200 ms.
func (n *Node) fillDisk() {
	s := n.s
	if n.r == nil || n.diskFull || !n.canCrash() {
		return
	}
	n.disk.SetCapacity(1)
	n.diskFull = true
	n.faultsArmed = true
	s.Counts.DiskFull++
	ep := n.epoch
	s.at(s.randDur(10*time.Millisecond, 200*time.Millisecond), func() {
		if n.epoch == ep && n.diskFull {
			n.disk.SetCapacity(0)
			n.diskFull = false
		}
	})
}

// truncatedCount counts the members that are or will be TRUNCATED.
func (s *Sim) truncatedCount() int {
	k := 0
	for _, n := range s.Nodes {
		switch {
		case n.flipPending, n.batchDamaged:
			k++
		case n.r != nil && n.r.Status().HardState.TruncatedAtTerm != 0:
			k++
		case n.r == nil && n.stopped.truncated:
			k++
		}
	}
	return k
}

// faultFlip flips one bit at rest in a durable record of a node, never in
// its last synced batch, within the TRUNCATED budget; the node is then
// crashed soon so that recovery finds it.
func (s *Sim) faultFlip() {
	if n := s.randomUp(); n != nil {
		n.flip()
	}
}

// flip flips a bit at rest in one of the node's durable records (within
// the budget) and crashes it soon after.
func (n *Node) flip() {
	s := n.s
	if n.r == nil || n.flipPending || s.truncatedCount()+1 > s.flipBudget() {
		return
	}
	if n.r.Status().HardState.TruncatedAtTerm != 0 {
		return
	}
	if s.opts.Snapshots != nil && s.chance(0.3) && s.flipSnapshot(n) {
		s.crashSoonAfterFlip(n)
		return
	}
	hi := min(n.durablePrev, n.r.Status().Durable)
	lo := n.w.FirstIndex()
	if hi < lo {
		return
	}
	i := lo + s.rng.Uint64N(hi-lo+1)
	recs, err := n.w.Records(i, i+1, math.MaxUint64)
	if err != nil || len(recs) != 1 {
		return
	}
	for _, name := range n.segmentFiles() {
		img, err := n.disk.ReadFile(name)
		if err != nil {
			continue
		}
		off := bytes.Index(img, recs[0])
		if off < 0 {
			continue
		}
		bit := s.rng.Uint64N(uint64(len(recs[0])) * 8)
		if err := n.disk.FlipBit(name, int64(off)+int64(bit/8), uint(bit%8)); err != nil {
			return
		}
		s.Counts.Flips++
		s.logf("n%d: bit flip at rest in record %d (%s)", n.ID, i, name)
		s.crashSoonAfterFlip(n)
		return
	}
}

// crashSoonAfterFlip marks n as about to be TRUNCATED (for the budget) and
// crashes it soon, so that recovery finds the damage.
func (s *Sim) crashSoonAfterFlip(n *Node) {
	n.flipPending = true
	ep := n.epoch
	s.at(s.randDur(0, 100*time.Millisecond), func() {
		if n.epoch == ep {
			n.crash("power loss after a bit flip")
		}
	})
}
