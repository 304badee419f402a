package raft

// Mark is a coverage mark of the core: a path worth reaching, as the
// spec's -sometimes properties are. The core stays pure: it reports a mark
// to Config.OnMark (nil: nothing, at no cost), and the replica runtime
// counts it with impl/marks under the mark's name; the simulator fails
// when its seeds never reach one (docs/raftsim.md).
type Mark uint8

const (
	MarkConflictTruncated Mark = iota + 1
	MarkAckAwaitsDurable
	MarkFenceReleased
	MarkVoteRefusedFloor
	MarkVoteMarkedTruncated
	MarkVoteIgnoredInLease
	MarkAppendRejected
	MarkReadConfirmed
	markEnd
)

var markInfo = [markEnd]struct{ name, what string }{
	MarkConflictTruncated:   {"raft/conflict-truncated", "a follower truncated a conflicting suffix of its log"},
	MarkAckAwaitsDurable:    {"raft/ack-awaits-durable", "a follower held an acknowledgment until its entries were durable"},
	MarkFenceReleased:       {"raft/fence-released", "a TRUNCATED member durably caught up with a newer leader's commit and was released"},
	MarkVoteRefusedFloor:    {"raft/vote-refused-learned-floor", "a vote the log check allowed was refused: the candidate is below the voter's learned commit"},
	MarkVoteMarkedTruncated: {"raft/vote-marked-truncated", "a TRUNCATED member granted a vote, marked (it counts only in a unanimous election)"},
	MarkVoteIgnoredInLease:  {"raft/vote-ignored-in-lease", "a vote request of a newer term ignored: the member heard from its leader within an election timeout"},
	MarkAppendRejected:      {"raft/append-rejected", "a follower refused an AppendEntries whose previous entry it lacks, with a hint"},
	MarkReadConfirmed:       {"raft/read-confirmed", "a ReadIndex round confirmed by a quorum released its reads"},
}

// String is the mark's name, "raft/what-happened".
func (m Mark) String() string {
	if m == 0 || m >= markEnd {
		return "raft/unknown-mark"
	}
	return markInfo[m].name
}

// What says in a few words when the mark is hit.
func (m Mark) What() string {
	if m == 0 || m >= markEnd {
		return ""
	}
	return markInfo[m].what
}

// AllMarks lists every mark of the core.
func AllMarks() []Mark {
	out := make([]Mark, 0, markEnd-1)
	for m := Mark(1); m < markEnd; m++ {
		out = append(out, m)
	}
	return out
}

// mark reports that the node took m's path.
func (n *Node) mark(m Mark) {
	if n.cfg.OnMark != nil {
		n.cfg.OnMark(m)
	}
}
