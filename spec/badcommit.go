package spec

// CorruptLeaderCommit is an environment action of the production profile
// (issue 10 item 5): one copy of an AppendEntries request in the bag has
// its mleaderCommit raised to any larger value up to MaxLog + 2, beyond
// every log the bounds (and the liveness check's continuation bounds,
// liveness.go) allow. It stands for a peer's bad value that passes every
// check a receiver can make (impl/raft's Validate: Commit <= LeaderCommit
// <= IndexMax), within a budget:
//
//	CorruptLeaderCommit(m) ==
//	    /\ badCommitsLeft > 0
//	    /\ m.mtype = AppendEntriesRequest
//	    /\ \E c \in (m.mleaderCommit + 1)..(MaxLog + 2) :
//	          messages' = WithMessage([m EXCEPT !.mleaderCommit = c], WithoutMessage(m, messages))
//	    /\ badCommitsLeft' = badCommitsLeft - 1
//	    /\ UNCHANGED <<every other variable>>
//
// Only mleaderCommit changes: mcommitIndex, the entries and the terms are
// what the leader sent. What a follower does with the value is
// learnedFrom's rule (clamped, or unclamped with -bug
// learned-commit-unclamped); the fence release (FenceReleases) reads it
// too. want, when not 0, is the one value a trace's label names.
func (m *Machine[T, L, V]) CorruptLeaderCommit(s *StateOf[T, L, V], msg MessageOf[T, L], want T, emit EmitOf[T, L, V]) {
	if s.BadCommitsLeft == 0 || msg.Mtype != AppendEntriesRequest {
		return
	}
	hi := T(m.MaxLog + 2)
	if want != 0 {
		hi = want
	}
	for c := msg.MleaderCommit + 1; c <= hi; c++ {
		if want != 0 && c != want {
			continue
		}
		bad := msg
		bad.MleaderCommit = c
		n := *s
		n.Discard(msg)
		n.Send(bad)
		n.BadCommitsLeft = s.BadCommitsLeft - 1
		emit(n, LabelOf[T, L]{Action: ActCorruptLeaderCommit, I: msg.Mdest, J: msg.Msource, Msg: msg, Cut: c})
	}
}
