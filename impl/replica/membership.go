package replica

import (
	"errors"
	"fmt"

	"github.com/durableraft/durableraft/impl/raft"
)

// Membership changes (docs/membership.md): the runtime's part. A change is
// asked for with EventChangeConfig and answered as a proposal is, once its
// configuration entry is applied; a configuration entry reaches the state
// machine as an empty entry (the core's no-op: the state machine's indexes
// stay contiguous and every replica applies the same); a change of the
// configuration in force is logged and handed to Config.OnMembership (the
// server's transport connects to a new member and stops sending to a
// removed one).

// ChangeRequest is one single-server change. Done is called exactly once,
// on the replica's goroutine, and must not block: with the configuration
// entry's index and term once it is applied, or with an error
// (ErrChangeRefused wrapping the core's reason, definite; ErrLost; ...).
type ChangeRequest struct {
	Change raft.ConfChange
	Done   func(Result)
}

// ErrChangeRefused: the leader refused a membership change (the core's
// error says why: raft.ErrConfigPending, raft.ErrConfigOwnTerm,
// raft.ErrLearnerBehind, raft.ErrRemovedID, ...). Definite: nothing was
// appended.
var ErrChangeRefused = errors.New("replica: membership change refused")

// changeConfig hands a change to the core; an accepted one waits for its
// entry to apply, as a proposal does.
func (r *Replica) changeConfig(req *ChangeRequest) {
	if req == nil || req.Done == nil {
		return
	}
	index, err := r.node.ChangeConfig(req.Change)
	if err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			err = ErrNotLeader
		}
		req.Done(Result{Err: fmt.Errorf("%w: %v %d: %w", ErrChangeRefused, req.Change.Kind, req.Change.ID, err)})
		return
	}
	r.log.Info("replica: membership change appended", "change", req.Change.Kind.String(), "id", uint64(req.Change.ID), "index", index)
	r.proposals = append(r.proposals, pendingProposal{index: index, done: req.Done})
}

// stateMachineEntry is the entry the state machine applies: a
// configuration entry as an empty one.
func stateMachineEntry(e raft.Entry) raft.Entry {
	if raft.IsConfigEntry(e.Data) {
		e.Data = nil
	}
	return e
}

// Membership is the configuration in force. Call it on the replica's
// goroutine.
func (r *Replica) Membership() raft.Membership { return r.node.Membership() }

// noteMembership reports the configuration in force.
func (r *Replica) noteMembership() {
	m := r.node.Membership()
	r.log.Info("replica: configuration in force", "voters", fmt.Sprint(m.Voters), "learners", fmt.Sprint(m.Learners),
		"removed", fmt.Sprint(m.Removed))
	r.stats.MembershipChanges.Add(1)
	if r.cfg.OnMembership != nil {
		r.cfg.OnMembership(m)
	}
}
