package sim

import (
	"slices"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
)

// Membership changes under faults (Options.Membership; docs/membership.md):
// the fault schedule asks the leader for a single-server change, as an
// operator would, and the checks count an entry durable on the voters of
// the configuration it was committed in; the end checks leave out removed
// members (the leader sends them nothing more, and their operator would
// stop them).

// MembershipOptions is Default with five nodes of which three start as
// the cluster, membership changes, no bit flips, and no repair from peers
// (the spec's -repair is not modelled with -membership yet, so such a
// trace could not be checked; without bit flips nobody is TRUNCATED).
func MembershipOptions(seed uint64) Options {
	o := Default(seed)
	o.N, o.Membership, o.InitVoters = 5, true, 3
	o.Faults.Flips, o.PeerRepair, o.Faults.ClusterPowerLoss = false, false, false
	return o
}

// initVoters is the initial configuration: nodes 1..InitVoters with
// membership, else every node.
func (s *Sim) initVoters() []raft.NodeID {
	ids := s.voters()
	if s.opts.Membership {
		ids = ids[:s.opts.InitVoters]
	}
	return ids
}

// faultMembership asks the leader for a change: promote a learner (it is
// refused until the learner caught up), add a node that never was a
// member, or remove a member while three voters remain.
func (s *Sim) faultMembership() {
	l := s.leader()
	if l == nil {
		return
	}
	m := l.r.Membership()
	var chs []raft.ConfChange
	for _, id := range m.Learners {
		chs = append(chs, raft.ConfChange{Kind: raft.ConfPromote, ID: id}, raft.ConfChange{Kind: raft.ConfPromote, ID: id})
	}
	for _, n := range s.Nodes {
		switch id := n.ID; {
		case slices.Contains(m.Removed, id) || slices.Contains(m.Learners, id):
		case slices.Contains(m.Voters, id):
			if len(m.Voters) > 3 {
				chs = append(chs, raft.ConfChange{Kind: raft.ConfRemove, ID: id})
			}
		default:
			chs = append(chs, raft.ConfChange{Kind: raft.ConfAddLearner, ID: id})
		}
	}
	if len(chs) == 0 {
		return
	}
	ch := chs[s.rng.IntN(len(chs))]
	done := func(res replica.Result) {
		if res.Err == nil {
			s.Counts.ConfigChanges++
			s.logf("n%d: %v %d applied at %d", l.ID, ch.Kind, ch.ID, res.Index)
		}
	}
	l.handle(replica.Event{Kind: replica.EventChangeConfig, Change: &replica.ChangeRequest{Change: ch, Done: done}})
}

// finalMember reports whether n is a member of the configuration of the
// leader (always without membership, or without a leader).
func (s *Sim) finalMember(n *Node) bool {
	if !s.opts.Membership {
		return true
	}
	l := s.leader()
	if l == nil {
		return true
	}
	m := l.r.Membership()
	return slices.Contains(m.Voters, n.ID) || slices.Contains(m.Learners, n.ID)
}
