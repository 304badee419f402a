package raft

// The persistence window (spec/window.go): the hard state and a suffix
// truncation a Ready hands out are durable only when the driver says so.
// The core needs nothing of it to be safe (the driver holds back what
// depends on them), but its trace must say when the window closes, so
// that a crash inside it (which may undo the step) is a step of the spec.

// sameHardState compares the hard state to persist: term, vote and the
// TRUNCATED mark. LearnedCommit is not hard state to persist (Ready).
func sameHardState(a, b HardState) bool {
	return a.Term == b.Term && a.Vote == b.Vote && a.TruncatedAtTerm == b.TruncatedAtTerm && a.Ambiguous == b.Ambiguous
}

// windowOpen reports whether the last Ready handed out a hard state or a
// truncation that the driver has not reported durable yet.
func (n *Node) windowOpen() bool {
	return !sameHardState(n.hsHanded, n.hsPersisted) || n.truncationHanded
}

// Persisted tells the node that the hard state and the suffix truncation of
// the Ready it handed out last are durable, and that the driver releases
// (or has released) its MessagesAfterPersist. The driver calls it before
// the next input, once its WAL's progress covers them; a driver that
// persists each Ready synchronously calls it right after. It is spec
// Persist; with nothing pending it does nothing.
func (n *Node) Persisted() {
	if !n.windowOpen() {
		return
	}
	n.hsPersisted, n.truncationHanded = n.hsHanded, false
	if n.tr != nil {
		n.tr.event("Persist", None, nil, "")
	}
}
