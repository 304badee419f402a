package replica

import "github.com/durableraft/durableraft/impl/raft"

// Transition log lines: each change of the promotion fence is logged once,
// when it happens (the core's alerts repeat a lasting fence every
// AlertTicks; these lines do not), and every refused promotion (a campaign;
// a transfer to this node: the core's alert) says the local durable tip against the
// learned commit, the cluster's high-water mark this node knows.

// fenceAlerts are the alert kinds the core raises when the fence changes.
var fenceAlerts = map[raft.AlertKind]bool{
	raft.AlertFenced: true, raft.AlertPermanentFence: true, raft.AlertFenceReleased: true, raft.AlertHardStateLost: true,
}

// noteFence logs a change of the fence since the last one logged. It
// reads the core's status only when a Ready brought a fence alert (the
// core raises one at every change).
func (r *Replica) noteFence(alerts []raft.Alert) {
	seen := false
	for _, a := range alerts {
		seen = seen || fenceAlerts[a.Kind]
	}
	if !seen {
		return
	}
	r.logFence(r.node.Status())
}

// logFence logs st's fence if it differs from the one logged last.
func (r *Replica) logFence(st raft.Status) {
	if st.Fence == r.fence {
		return
	}
	was := r.fence
	r.fence = st.Fence
	args := []any{"fence", st.Fence.String(), "was", was.String(), "row", st.FenceRow, "why", st.FenceWhy,
		"durable", st.Durable, "learned_commit", st.HardState.LearnedCommit, "truncated_at_term", st.HardState.TruncatedAtTerm,
		"term", st.HardState.Term}
	switch {
	case st.Fence == raft.OutcomeEligible:
		r.log.Info("replica: fence released: may campaign and lead again", args...)
	case was == raft.OutcomeEligible || was == 0:
		r.log.Error("replica: FENCE SET: no campaign, no promotion", args...)
	default:
		r.log.Error("replica: FENCE CHANGED", args...)
	}
}

// refusedPromotion logs a campaign the core refused (a transfer to a
// fenced node is refused by the core's own alert, which says the same).
func (r *Replica) refusedPromotion(err error) {
	st := r.node.Status()
	r.log.Warn("replica: campaign refused", "err", err, "fence", st.Fence.String(), "row", st.FenceRow,
		"durable_tip", st.Durable, "learned_commit", st.HardState.LearnedCommit, "truncated_at_term", st.HardState.TruncatedAtTerm)
}
