package sim

// The repair of TRUNCATED members from their peers (raft.Config.PeerRepair,
// docs/repair.md) in the simulator: Options.PeerRepair turns it on, and
// the bit-flip budget grows from |Server| - quorum members TRUNCATED at
// once (what the fence release can repair: a quorum of voters left to
// elect the releasing leader) to every set that is not a quorum (two of
// four: the peers repair them without a leader).

// RepairOptions is Default on four nodes (the repair from peers, bit
// flips striking up to two members at once), snapshots included: a repair
// from below a peer's compaction point goes by the peer's snapshot (spec
// SendRepairSnapshot, docs/repair.md). Whole-cluster power losses are
// off: the spec's repair has no PowerLoss (spec/repair.go's validateRepair).
func RepairOptions(seed uint64) Options {
	o := Default(seed)
	o.N, o.PeerRepair = 4, true
	o.Faults.ClusterPowerLoss = false
	return o
}

// flipBudget is how many members may be TRUNCATED at once.
func (s *Sim) flipBudget() int {
	n := len(s.Nodes)
	if s.opts.PeerRepair {
		return n / 2 // the largest set that is not a majority
	}
	return n - (n/2 + 1)
}
