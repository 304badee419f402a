package sim

import (
	"fmt"

	"github.com/durableraft/durableraft/impl/replica"
)

// startLoad schedules the clients: proposals and reads, mostly to the
// leader, sometimes to any node (which refuses: not the leader).
func (s *Sim) startLoad() {
	if s.opts.ProposeEvery > 0 {
		s.at(s.randDur(0, s.opts.ProposeEvery), s.proposeLoop)
	}
	if s.opts.ReadEvery > 0 {
		s.at(s.randDur(0, s.opts.ReadEvery), s.readLoop)
	}
}

func (s *Sim) target() *Node {
	if l := s.leader(); l != nil && s.chance(0.9) {
		return l
	}
	return s.Nodes[s.rng.IntN(len(s.Nodes))]
}

func (s *Sim) proposeLoop() {
	if s.healing {
		return
	}
	n := s.target()
	k := s.Counts.Proposals
	s.Counts.Proposals++
	n.propose(fmt.Sprintf("c%d", k))
	s.at(s.randDur(0, 2*s.opts.ProposeEvery), s.proposeLoop)
}

func (s *Sim) readLoop() {
	if s.healing {
		return
	}
	n := s.target()
	if n.r != nil {
		s.Counts.Reads++
		n.handle(replica.Event{Kind: replica.EventRead, Reads: []replica.Read{{Done: s.check.readDone(n, s.check.maxAcked())}}})
	}
	s.at(s.randDur(0, 2*s.opts.ReadEvery), s.readLoop)
}

// propose hands one client write to the node.
func (n *Node) propose(data string) {
	if n.r == nil {
		return
	}
	n.handle(replica.Event{Kind: replica.EventPropose, Proposals: []replica.Proposal{{Data: []byte(data), Done: n.s.check.proposalDone(n, data)}}})
}

// proposeFinal proposes the entry whose acknowledgment ends a healed run.
func (n *Node) proposeFinal() {
	n.s.check.finalPending = n.ID
	n.propose(finalData)
}

const finalData = "final"
