package rafttest

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/durableraft/durableraft/impl/raft"
)

// RandomOptions shape a randomized run.
type RandomOptions struct {
	N     int
	Seed  uint64
	Steps int
	// Faults.
	Drops, Dups, Crashes, Corruptions, Partitions, WALFailures bool
	// HardStateLosses: a member loses its hard state (LoseHardState, the
	// copy chosen at random) and runs passive from then on. Off in
	// DefaultRandom (its seeds keep their runs); HardStateLossRandom.
	HardStateLosses      bool
	PreVote, CheckQuorum bool
	// Small batches and windows exercise batching and flow control.
	MsgEntriesMax, InflightMsgsMax int
	// Membership: nodes 1..InitVoters start as the cluster, the others
	// outside it, and the leader is asked for random single-server changes
	// (MembershipRandom).
	Membership bool
	InitVoters int
	// PeerRepair: raft.Config.PeerRepair (RepairRandom).
	PeerRepair bool
	Bugs       raft.Bug
	// Log, when set, receives what each step printed.
	Log func(step int, out string)
}

// DefaultRandom is the fault mix of TestRandomized.
func DefaultRandom(seed uint64) RandomOptions {
	return RandomOptions{N: 3 + int(seed%3), Seed: seed, Steps: 400,
		Drops: true, Dups: true, Crashes: true, Corruptions: true, Partitions: true, WALFailures: true,
		PreVote: seed%2 == 0, CheckQuorum: seed%4 < 2, MsgEntriesMax: 2 * int(seed/2%2), InflightMsgsMax: 1 + int(seed%4)}
}

// HardStateLossRandom is DefaultRandom with hard-state losses.
func HardStateLossRandom(seed uint64) RandomOptions {
	o := DefaultRandom(seed)
	o.HardStateLosses = true
	return o
}

// RepairRandom is DefaultRandom with the repair of TRUNCATED members from
// their peers (raft.Config.PeerRepair) on four nodes every other seed.
func RepairRandom(seed uint64) RandomOptions {
	o := DefaultRandom(seed)
	o.PeerRepair = true
	if seed%2 == 0 {
		o.N = 4
	}
	return o
}

// MembershipRandom is DefaultRandom on 5 nodes of which 3 start as the
// cluster, with random membership changes, and without corruptions or
// hard-state losses (their budget, "a quorum of every configuration stays
// able to vote", is the spec's environment assumption and this runner does
// not track it across configurations).
func MembershipRandom(seed uint64) RandomOptions {
	o := DefaultRandom(seed)
	o.N, o.Membership, o.InitVoters, o.Corruptions, o.Steps = 5, true, 3, false, 800
	// Fewer faults than DefaultRandom on some seeds, so that changes
	// commit and the next one is allowed (one at a time).
	o.Partitions, o.WALFailures, o.Drops = seed%3 == 0, seed%4 == 0, seed%2 == 0
	return o
}

// RunRandom runs one seeded randomized behaviour: message delivery in
// random order, drops, duplicates, ticks, partial and full flushes,
// proposals, reads, transfers, crashes that lose unsynced entries,
// corruptions of a minority, partitions and failed WALs. The cluster's
// invariants are checked after every step; the trace is in the cluster.
// At the end the faults stop and the cluster must elect a leader and commit
// one more entry.
func RunRandom(o RandomOptions) (*Cluster, error) {
	c, err := NewCluster(Options{N: o.N, Seed: o.Seed, PreVote: o.PreVote, CheckQuorum: o.CheckQuorum,
		MsgEntriesMax: o.MsgEntriesMax, InflightMsgsMax: o.InflightMsgsMax, ElectionTick: 6, Bugs: o.Bugs, Trace: true,
		Membership: o.Membership, InitVoters: o.InitVoters, PeerRepair: o.PeerRepair})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0xabcdef))
	pick := func() raft.NodeID { return raft.NodeID(1 + rng.IntN(o.N)) }
	proposals := 0
	for step := 0; step < o.Steps && len(c.Violations) == 0; step++ {
		c.Out.Reset()
		r := rng.IntN(1000)
		switch {
		case r < 400 && len(c.Net) > 0:
			// Mostly among the oldest few (reordering nearby), sometimes
			// any message (a long delay).
			if rng.IntN(5) == 0 {
				c.Deliver(rng.IntN(len(c.Net)))
			} else {
				c.Deliver(rng.IntN(min(len(c.Net), 3)))
			}
		case r < 430 && len(c.Net) > 0 && o.Drops:
			c.Drop(rng.IntN(len(c.Net)))
		case r < 450 && len(c.Net) > 0 && o.Dups:
			c.Duplicate(rng.IntN(len(c.Net)))
		case r < 650:
			c.Tick(pick())
		case r < 750:
			id := pick()
			if sn := c.Node(id); sn.Node != nil && rng.IntN(3) == 0 {
				last := sn.WAL.Log.LastIndex()
				if last > sn.WAL.Durable {
					c.FlushTo(id, sn.WAL.Durable+1+rng.Uint64N(last-sn.WAL.Durable))
				}
			} else {
				c.Flush(id)
			}
		case r < 820:
			if l := c.Leader(); l != nil {
				proposals++
				_ = c.Propose(l.ID, fmt.Sprintf("p%d", proposals))
			}
		case r < 835:
			if l := c.Leader(); l != nil {
				_ = c.ReadIndex(l.ID, fmt.Sprintf("r%d", step))
			}
		case r < 842:
			if l := c.Leader(); l != nil {
				_ = l.Node.TransferLeadership(pick())
				c.handle(l)
			}
		case r < 870 && o.Crashes:
			id := pick()
			if sn := c.Node(id); sn.Node != nil {
				c.Stop(id, rng.IntN(3)-1)
			} else {
				err = c.Start(id)
			}
		case r < 885 && o.Corruptions:
			// Keep a quorum of members that can vote: with fewer, no leader
			// can be elected to repair the TRUNCATED ones (docs/refinement.md).
			id := pick()
			if d := c.durableOf(id); d > 0 && c.truncatedWith(id) <= o.N-(o.N/2+1) {
				_ = c.Corrupt(id, rng.Uint64N(d))
			}
		case r < 900 && o.Partitions:
			if rng.IntN(2) == 0 {
				c.Isolate(pick())
			} else {
				c.Heal()
			}
		case r < 905 && o.WALFailures:
			c.FailWAL(pick())
		case r < 908 && o.HardStateLosses:
			// Within the same budget as corruptions: the members that lost
			// their hard state vote no more.
			if id := pick(); c.truncatedWith(id) <= o.N-(o.N/2+1) {
				err = c.LoseHardState(id, HardStateCopy(rng.IntN(2)), false)
			}
		case r < 960 && o.Membership:
			if l := c.Leader(); l != nil {
				if ch, ok := randomChange(rng, l.Node.Membership(), o.N); ok {
					if _, err := c.ChangeConfig(l.ID, ch.Kind, ch.ID); err == nil {
						c.countChange(ch.Kind)
					}
				}
			}
		default:
			// Restart a node whose WAL failed, start a stopped one.
			for _, sn := range c.Nodes {
				if sn.Node == nil {
					err = c.Start(sn.ID)
					break
				}
				if sn.Node.Status().WALFailed {
					err = c.Restart(sn.ID, rng.IntN(3)-1)
					break
				}
			}
		}
		if err != nil {
			return c, err
		}
		if o.Membership {
			c.promoteCaughtUp()
		}
		c.CheckInvariants()
		if o.Log != nil {
			o.Log(step, c.Out.String())
		}
	}
	if len(c.Violations) > 0 {
		return c, nil
	}
	return c, c.converge(o.Log)
}

// randomChange picks a change the configuration m allows: a node of
// 1..n that never was a member joins as a learner, a learner is promoted
// (the leader refuses it until it caught up) or leaves, a voter leaves
// while three remain.
func randomChange(rng *rand.Rand, m raft.Membership, n int) (raft.ConfChange, bool) {
	var out []raft.ConfChange
	for id := raft.NodeID(1); id <= raft.NodeID(n); id++ {
		switch {
		case slices.Contains(m.Removed, id):
		case slices.Contains(m.Learners, id):
			out = append(out, raft.ConfChange{Kind: raft.ConfPromote, ID: id}, raft.ConfChange{Kind: raft.ConfPromote, ID: id},
				raft.ConfChange{Kind: raft.ConfRemove, ID: id})
		case slices.Contains(m.Voters, id):
			if len(m.Voters) > 3 {
				out = append(out, raft.ConfChange{Kind: raft.ConfRemove, ID: id})
			}
		default:
			out = append(out, raft.ConfChange{Kind: raft.ConfAddLearner, ID: id})
		}
	}
	if len(out) == 0 {
		return raft.ConfChange{}, false
	}
	return out[rng.IntN(len(out))], true
}

// promoteCaughtUp asks the leader to promote its first learner, as an
// operator waiting for the learner to catch up would keep asking; the
// leader refuses until it has (and while a change is pending).
func (c *Cluster) promoteCaughtUp() {
	l := c.Leader()
	if l == nil {
		return
	}
	if m := l.Node.Membership(); len(m.Learners) > 0 {
		if _, err := c.ChangeConfig(l.ID, raft.ConfPromote, m.Learners[0]); err == nil {
			c.countChange(raft.ConfPromote)
		}
	}
}

func (c *Cluster) countChange(k raft.ConfChangeKind) {
	c.ConfigChanges++
	if c.ChangeKinds == nil {
		c.ChangeKinds = map[raft.ConfChangeKind]int{}
	}
	c.ChangeKinds[k]++
}

// truncatedWith counts the members that cannot vote (TRUNCATED, or with a
// lost hard state) if id were one too.
func (c *Cluster) truncatedWith(id raft.NodeID) int {
	k := 0
	for _, sn := range c.Nodes {
		if sn.ID == id || sn.WAL.HS.TruncatedAtTerm != 0 || sn.WAL.HSLost {
			k++
		}
	}
	return k
}

// durableOf is a node's durable index as the spec knows it.
func (c *Cluster) durableOf(id raft.NodeID) uint64 {
	sn := c.Node(id)
	if sn.Node != nil {
		return sn.Node.Status().Durable
	}
	return sn.stopDurable
}

// converge ends the faults: every node up and healthy, the network healed
// and reliable, disks flushing; a leader must emerge and commit an entry.
func (c *Cluster) converge(log func(int, string)) error {
	c.Heal()
	for _, sn := range c.Nodes {
		if sn.Node == nil {
			if err := c.Start(sn.ID); err != nil {
				return err
			}
		} else if sn.Node.Status().WALFailed {
			if err := c.Restart(sn.ID, 0); err != nil {
				return err
			}
		}
	}
	var proposedTerm uint64
	for round := 0; round < 400; round++ {
		c.Out.Reset()
		for _, sn := range c.Nodes {
			c.Tick(sn.ID)
		}
		c.Stabilize(true, 20)
		if c.Opts.Membership {
			c.promoteCaughtUp()
			c.Stabilize(true, 20)
		}
		c.CheckInvariants()
		if log != nil {
			log(100000+round, c.Out.String())
		}
		if len(c.Violations) > 0 {
			return nil
		}
		l := c.Leader()
		if l == nil {
			continue
		}
		if term := l.Node.Status().HardState.Term; term != proposedTerm {
			if err := c.Propose(l.ID, "final"); err == nil {
				proposedTerm = term
			}
			continue
		}
		for _, a := range c.acks {
			if a.data == "final" {
				return nil
			}
		}
	}
	var st []string
	for _, sn := range c.Nodes {
		st = append(st, describe(sn))
	}
	return fmt.Errorf("rafttest: no leader committed an entry after the faults stopped: %v", st)
}
