package raft

// The ambiguous tail (spec/power.go, issue 10 item 2). A boot whose WAL
// found the last batch damaged with nothing vouching for it
// (VerdictAmbiguous) cannot tell a write torn before its fdatasync from a
// synced, possibly acknowledged batch damaged at rest. The member is
// AMBIGUOUS: HardState.TruncatedAtTerm marks it (the WAL writes the mark
// before the cut is durable) with HardState.Ambiguous saying the mark is
// not a TRUNCATED one. The rule of marked votes (spec -marked-votes,
// docs/durable-raft.md), for every member that is not CLEAN, TRUNCATED or
// AMBIGUOUS:
//
//   - it votes as any voter does, against its durable log, and marks its
//     grants (Message.Ambiguous, spec mambiguous);
//   - a candidate wins on a quorum of unmarked grants, or on the grants of
//     every voter (unanimous; spec electedBy);
//   - it may campaign (the promotion fence has no verdict half), and once
//     elected so it is CLEAN; as a follower it is repaired by
//     FenceReleases.
//
// With BugTruncatedWithholdsVote a TRUNCATED member grants no vote and
// never campaigns (the rule before: one TRUNCATED and one AMBIGUOUS member
// of three wedge the cluster); with BugTruncatedMemberVotes its grants are
// unmarked (they count as a CLEAN voter's).

// truncated reports whether the mark is a TRUNCATED one (spec verdict
// TRUNCATED).
func (n *Node) truncated() bool { return n.hs.TruncatedAtTerm != 0 && !n.hs.Ambiguous }

// ambiguous reports whether the mark is an AMBIGUOUS one.
func (n *Node) ambiguous() bool { return n.hs.TruncatedAtTerm != 0 && n.hs.Ambiguous }

// markedVoter reports whether the node's grants are marked (spec
// markedVoter).
func (n *Node) markedVoter() bool {
	switch {
	case n.ambiguous():
		return true
	case n.truncated():
		return !n.has(BugTruncatedWithholdsVote) && !n.has(BugTruncatedMemberVotes)
	}
	return false
}

// withholdsVote reports whether the node's verdict refuses every vote and
// pre-vote: a TRUNCATED member under the rule before marked votes
// (BugTruncatedWithholdsVote, unless BugTruncatedMemberVotes), an
// AMBIGUOUS one under BugAmbiguousWithholdsVote.
func (n *Node) withholdsVote() bool {
	if n.truncated() {
		return n.has(BugTruncatedWithholdsVote) && !n.has(BugTruncatedMemberVotes)
	}
	return n.ambiguous() && n.has(BugAmbiguousWithholdsVote)
}

// bootMark is the mark the boot's verdict leaves (spec Corrupt, PowerLoss):
// TRUNCATED replaces any mark; AMBIGUOUS marks a member that is not
// TRUNCATED already (spec PowerLoss keeps a TRUNCATED verdict), each with
// the current term. With BugAmbiguousTailClean an AMBIGUOUS boot keeps
// the mark it found (CLEAN boots CLEAN, as spec -bug ambiguous-tail-clean:
// the verdict stays as it was). The bug's storage half is the driver's: a
// WAL that writes no mark (the rafttest harness honours it; impl/wal
// writes the mark, so under the replica the switch changes nothing).
func (n *Node) bootMark(hs HardState, v Verdict) HardState {
	switch {
	case v == VerdictTruncated:
		hs.TruncatedAtTerm, hs.Ambiguous = hs.Term, false
	case v == VerdictAmbiguous && n.has(BugAmbiguousTailClean):
	case v == VerdictAmbiguous:
		hs.Ambiguous = hs.TruncatedAtTerm == 0 || hs.Ambiguous
		hs.TruncatedAtTerm = hs.Term
	}
	return hs
}

// ballotGranted and ballotAmbiguous are the bits of an answer in
// Node.ballot.
const (
	ballotGranted uint8 = 1 << iota
	ballotAmbiguous
)

// resetVotes forgets the votes of the last election.
func (n *Node) resetVotes() {
	n.trk.ResetVotes()
	clear(n.ballot)
}

// recordVote records id's answer, as the tracker does (the first answer of
// an id counts), and whether a grant was marked ambiguous (spec
// votesAmbiguous).
func (n *Node) recordVote(id NodeID, granted, ambiguous bool) {
	n.trk.RecordVote(uint64(id), granted)
	if n.ballot == nil {
		n.ballot = map[NodeID]uint8{}
	}
	if _, ok := n.ballot[id]; ok {
		return
	}
	var b uint8
	if granted {
		b = ballotGranted
		if ambiguous {
			b |= ballotAmbiguous
		}
	}
	n.ballot[id] = b
}

// electedBy is spec electedBy for the voters of the configuration in
// force, given that the grants are a quorum: with an AMBIGUOUS grant among
// them, a quorum of the others, or every voter.
func (n *Node) electedBy() bool {
	voters := n.trk.Config.Voters
	marked := false
	for _, id := range voters {
		marked = marked || n.ballot[NodeID(id)]&ballotAmbiguous != 0
	}
	if !marked {
		return true
	}
	clean := voters.IsQuorum(func(id uint64) bool { return n.ballot[NodeID(id)] == ballotGranted })
	every := true
	for _, id := range voters {
		every = every && n.ballot[NodeID(id)]&ballotGranted != 0
	}
	return clean || every
}

// repairOnElection is spec BecomeLeader's repair: a member that is not
// CLEAN elected (so, by electedBy, unanimously) is CLEAN; under
// BugTruncatedWithholdsVote only an AMBIGUOUS one (a TRUNCATED member is
// elected only with BugNoPromotionFence, and stays TRUNCATED).
func (n *Node) repairOnElection() {
	if n.ambiguous() || (n.truncated() && !n.has(BugTruncatedWithholdsVote)) {
		n.hs.TruncatedAtTerm, n.hs.Ambiguous = 0, false
	}
}

// verdictString is the spec's verdict of the member.
func (n *Node) verdictString() string {
	switch {
	case n.ambiguous():
		return "AMBIGUOUS"
	case n.truncated():
		return "TRUNCATED"
	}
	return "CLEAN"
}
