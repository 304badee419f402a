package sim

import (
	"bytes"
	"math"

	"github.com/durableraft/durableraft/impl/raft"
)

// Whole-cluster power losses (issue 10 item 2, spec PowerLoss): every node
// loses power at once, and before it the last synced batch of some of them
// is damaged at rest: a bit flips in the node's last durable record, which
// lies in the last batch its WAL fdatasync'd. Recovery finds that batch
// damaged: AMBIGUOUS (row R6) when nothing vouches for it, TRUNCATED (R7)
// when a seal or a later batch does. The budget is the bit flips' (at most
// |Server| - quorum members damaged or marked, TRUNCATED or AMBIGUOUS,
// counting this one): stricter than the spec's "fewer than a quorum",
// which at 4 nodes allows two TRUNCATED members, and two TRUNCATED members
// of four grant too few votes for anyone to be elected (seed 7 of make
// sim-power with the spec's budget).

// faultClusterPowerLoss damages the last synced batch of up to the budget
// of the nodes that are up (each with probability one half), then cuts the
// power of every node that is up.
func (s *Sim) faultClusterPowerLoss() {
	s.Counts.ClusterPowerLosses++
	for _, n := range s.Nodes {
		if n.r != nil && n.canCrash() && s.chance(0.5) && s.truncatedCount()+1 <= len(s.Nodes)-(len(s.Nodes)/2+1) {
			n.damageLastBatch()
		}
	}
	for _, n := range s.Nodes {
		if n.r != nil {
			s.Counts.PowerLosses++
			n.crash("whole-cluster power loss")
		}
	}
}

// damageLastBatch flips a bit in the node's last durable record, at rest,
// once the core knows it durable (the spec's durableLen: a recovery that
// cuts below it is its PowerLoss, or Corrupt when a seal vouched for the
// batch, and neither may cut at or above it).
func (n *Node) damageLastBatch() {
	s := n.s
	i := n.w.Progress().DurableIndex
	if i < n.w.FirstIndex() || i == 0 || i != n.r.Status().Durable {
		return
	}
	recs, err := n.w.Records(i, i+1, math.MaxUint64)
	if err != nil || len(recs) != 1 {
		return
	}
	segs := n.segmentFiles()
	for k := len(segs) - 1; k >= 0; k-- {
		img, err := n.disk.ReadFile(segs[k])
		if err != nil {
			continue
		}
		off := bytes.LastIndex(img, recs[0])
		if off < 0 {
			continue
		}
		bit := s.rng.Uint64N(uint64(len(recs[0])) * 8)
		if err := n.disk.FlipBit(segs[k], int64(off)+int64(bit/8), uint(bit%8)); err != nil {
			return
		}
		n.batchDamaged = true
		s.Counts.SyncedBatchFlips++
		s.logf("n%d: bit flip at rest in its last synced batch, record %d (%s)", n.ID, i, segs[k])
		return
	}
}

// declarePowerLosses gives the trace its PowerLoss budget at the first boot
// whose WAL verdict is AMBIGUOUS (the core traces it as PowerLoss): the
// budget is the whole run's, in the Init event's config, which a trace
// without such a boot does not name (and TLC, whose PowerLoss has no
// production actions yet, can check). The spec's PowerLoss has no
// membership and no repair: there the trace is checked up to here (with
// PeerRepair a bit flip at rest in a node's last batch boots it AMBIGUOUS
// too).
func (s *Sim) declarePowerLosses() {
	if len(s.Events) == 0 || s.Events[0].Config == nil {
		return
	}
	if s.opts.Membership || s.opts.PeerRepair {
		if s.TraceCheckable < 0 {
			s.TraceCheckable = len(s.Events)
		}
		return
	}
	s.Events[0].Config.PowerLosses = raft.DefaultTraceBudget
}
