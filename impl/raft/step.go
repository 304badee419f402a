package raft

import "fmt"

// Step hands the node a message from the network. Every field is validated
// first (Validate, then the checks against the local log in the handlers);
// an invalid message is refused with ErrInvalidMessage and changes nothing.
// A node whose WAL failed refuses every message with ErrWALFailed.
func (n *Node) Step(m Message) error {
	if err := Validate(&m, n.id, nil); err != nil {
		return err
	}
	if m.Type == MsgSnap {
		return fmt.Errorf("%w: a snapshot reaches the core through StepSnapshot, once the driver holds it", ErrInvalidMessage)
	}
	defer n.checkInvariants()
	if n.walFailed {
		n.traceDrop(&m)
		return ErrWALFailed
	}
	if n.stepFirstBoot(&m) {
		return nil
	}
	switch m.Type {
	case MsgVote:
		n.handleVote(m)
	case MsgVoteResp:
		n.handleVoteResp(m)
	case MsgApp:
		if m.Term > n.hs.Term {
			n.updateTerm(&m, m.From)
		}
		n.handleApp(m)
	case MsgAppResp:
		switch {
		case m.Term > n.hs.Term:
			n.updateTerm(&m, None)
			n.traceDrop(&m)
		case m.Term < n.hs.Term:
			if n.tr != nil {
				n.tr.event("DropStaleResponse", m.From, &m, "")
			}
		case n.progressOf(m.From) == nil:
			// Not leading (no progress is kept), or from no member of the
			// configuration in force (a removed member, or one whose
			// addition was cut).
			n.traceDrop(&m)
		default:
			n.handleAppResp(m)
		}
	case MsgAppRespPassive:
		// A member whose hard state was lost: flow control only. It raises
		// no term and counts toward nothing; for another term, or when this
		// node does not lead, it is ignored. No spec step.
		if m.Term == n.hs.Term && n.role == RoleLeader && n.progressOf(m.From) != nil {
			n.handlePassiveResp(m)
		}
	case MsgPreVote:
		n.handlePreVote(m)
	case MsgPreVoteResp:
		n.handlePreVoteResp(m)
	case MsgTimeoutNow:
		n.handleTimeoutNow(m)
	case MsgRepair:
		n.handleRepair(m)
	case MsgRepairResp:
		n.handleRepairResp(m)
	default:
		panic(fmt.Sprintf("raft: Step: validated message of type %v", m.Type))
	}
	n.maybeStepDownRemoved()
	n.maybeAutoPromote()
	return nil
}

// handleTimeoutNow: the leader asks this node to campaign at once (a
// leadership transfer), skipping pre-vote; voters grant it despite their
// lease.
func (n *Node) handleTimeoutNow(m Message) {
	if m.Term != n.hs.Term || m.From != n.lead || n.role == RoleLeader {
		return
	}
	if !n.promotable() {
		n.alert(AlertFenced, "leader %d asked me to take over, but I am fenced (durable tip %d, learned commit %d, TRUNCATED at term %d)",
			m.From, n.log.durable, n.hs.LearnedCommit, n.hs.TruncatedAtTerm)
		return
	}
	n.hup(true)
}
