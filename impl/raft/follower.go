package raft

// The follower's side of replication: spec HandleAppendEntriesBatch, with
// acknowledgments held until the entries are durable.

// handleApp handles a MsgApp of a term no newer than the node's (Step has
// run UpdateTerm).
func (n *Node) handleApp(m Message) {
	if m.Term < n.hs.Term {
		n.rejectApp(&m, false)
		return
	}
	switch n.role {
	case RoleLeader:
		n.alert(AlertProtocol, "AppendEntries from %d in my own term %d as leader", m.From, m.Term)
		return
	case RoleCandidate:
		n.becomeFollower(m.From)
		if n.tr != nil {
			n.tr.event("HandleAppendEntriesBatch", m.From, &m, "return-to-follower")
		}
	case RolePreCandidate:
		n.becomeFollower(m.From)
	}
	n.lead = m.From
	n.electionElapsed, n.leaderSilentTicks = 0, 0
	view, all, bad := n.compactedView(&m)
	switch {
	case bad:
		n.alert(AlertProtocol, "leader %d of term %d sent an entry of another term at my compaction point %d", m.From, m.Term, n.log.first-1)
		return
	case all:
		n.ackApp(&m) // every entry of it is below my compaction point: committed, durable, held
		return
	}
	if view.PrevLogIndex != 0 && !n.log.matchTerm(view.PrevLogIndex, view.PrevLogTerm) {
		n.rejectApp(&m, true)
		return
	}
	n.appendFrom(&m, &view)
}

// appendFrom is the accepting part of handleApp: view is m as the log can
// check it (compactedView), m the message as received (for the trace and
// the acknowledgment).
func (n *Node) appendFrom(orig, view *Message) {
	m := *orig
	present, conflict := n.scanEntries(view)
	if conflict > 0 {
		from := view.PrevLogIndex + uint64(conflict)
		if from <= n.log.committed {
			n.alert(AlertProtocol, "leader %d of term %d conflicts at %d, below my commit index %d", m.From, m.Term, from, n.log.committed)
			return
		}
		n.log.truncate(from)
		n.truncateConfs(from)
		n.mark(MarkConflictTruncated)
		if n.tr != nil {
			n.tr.truncateLog(from)
			n.tr.event("HandleAppendEntriesBatch", m.From, &m, "conflict")
		}
		present = conflict - 1
	}
	if present < len(view.Entries) {
		n.log.append(view.Entries[present:]...)
		n.noteEntries(view.Entries[present:])
		if n.tr != nil {
			n.tr.appendLog(view.Entries[present:]...)
			n.tr.event("HandleAppendEntriesBatch", m.From, &m, "append")
		}
	}
	if n.log.durable >= m.PrevLogIndex+uint64(len(m.Entries)) || n.has(BugFollowerAcksAppended) {
		n.ackApp(&m)
		return
	}
	if len(m.Entries) == 0 {
		n.ackDurable(&m)
		return
	}
	if len(n.pendingAcks) >= n.cfg.PendingAcksMax {
		n.traceDrop(&n.pendingAcks[0])
		n.pendingAcks = n.pendingAcks[1:]
	}
	n.pendingAcks = append(n.pendingAcks, m)
	n.mark(MarkAckAwaitsDurable)
}

// scanEntries compares m's entries with the log: present is how many of
// them (from the first) the log holds; conflict is the 1-based position of
// the first one the log holds with another term, or 0.
func (n *Node) scanEntries(m *Message) (present, conflict int) {
	for k, e := range m.Entries {
		t, ok := n.log.term(e.Index)
		if !ok {
			break
		}
		if t != e.Term {
			return present, k + 1
		}
		present = k + 1
	}
	return present, 0
}

// rejectApp is the reject branch: a stale term, or a log that does not
// match at m.PrevLogIndex. The hint lets the leader skip back by term.
func (n *Node) rejectApp(m *Message, hint bool) {
	if n.tr != nil {
		n.tr.event("HandleAppendEntriesBatch", m.From, m, "reject")
	}
	resp := Message{Type: MsgAppResp, To: m.From, Term: n.hs.Term, Round: m.Round, Seq: m.Seq}
	if hint {
		n.mark(MarkAppendRejected)
		h := min(m.PrevLogIndex, n.log.last)
		h = n.log.findConflictByTerm(h, m.PrevLogTerm)
		resp.HintIndex = h
		resp.HintTerm, _ = n.log.term(h)
	}
	n.send(resp)
}

// ackApp is the already-done branch: every entry of m is in the log, and
// durable. The commit index takes the message's (clamped) commit if larger,
// learnedCommit its LeaderCommit clamped to the match (spec learnedFrom:
// what the message proves this member holds; a peer's bad value cannot
// raise the voter floor beyond the member's own durable log or close its
// fence), and a TRUNCATED member's fence releases when FenceReleases holds.
func (n *Node) ackApp(m *Message) {
	match := m.PrevLogIndex + uint64(len(m.Entries))
	n.log.committed = max(n.log.committed, m.Commit)
	n.hs.LearnedCommit = max(n.hs.LearnedCommit, n.learnedFrom(m.LeaderCommit, match))
	if n.hs.TruncatedAtTerm != 0 && n.fenceReleases(m, match) {
		n.hs.TruncatedAtTerm, n.hs.Ambiguous = 0, false // TRUNCATED or AMBIGUOUS
		n.mark(MarkFenceReleased)
	}
	if n.tr != nil {
		n.tr.event("HandleAppendEntriesBatch", m.From, m, "already-done")
	}
	n.send(Message{Type: MsgAppResp, To: m.From, Term: n.hs.Term, Success: true, MatchIndex: match, Round: m.Round, Seq: m.Seq})
	n.evaluatePolicy(false)
}

// ackDurable is the durable-prefix branch: a heartbeat whose PrevLogIndex
// the log holds (and matches) but has not made durable yet is answered at
// once with the durable index, a prefix of the leader's log by Log
// Matching. The leader counts what is durable, check-quorum and the read
// round (Round) are confirmed, and none of them waits for an fdatasync.
// The heartbeat is consumed: its commit index is learned from the next one
// (the entries' own requests are acknowledged when durable).
func (n *Node) ackDurable(m *Message) {
	if n.tr != nil {
		n.tr.event("HandleAppendEntriesBatch", m.From, m, "durable-prefix")
	}
	n.send(Message{Type: MsgAppResp, To: m.From, Term: n.hs.Term, Success: true, MatchIndex: n.log.durable, Round: m.Round, Seq: m.Seq})
}

// fenceReleases is spec FenceReleases: the leader's term is newer than the
// corruption's, and its commit index c is an entry of its own term that
// this member now durably holds.
func (n *Node) fenceReleases(m *Message, match uint64) bool {
	c := m.LeaderCommit
	if n.has(BugReleaseAtLeaderCommit) {
		return c <= match
	}
	t, ok := n.log.term(c)
	return m.Term > n.hs.TruncatedAtTerm && c >= 1 && c <= match && ok && t == m.Term
}

// ackable reports whether a pending m can still be acknowledged: it is of
// the current term, the node follows, and the log still holds all of it.
func (n *Node) ackable(m *Message) bool {
	if m.Term != n.hs.Term || (n.role != RoleFollower && n.role != RolePreCandidate) {
		return false
	}
	view, all, bad := n.compactedView(m)
	if all || bad {
		return all
	}
	if view.PrevLogIndex != 0 && !n.log.matchTerm(view.PrevLogIndex, view.PrevLogTerm) {
		return false
	}
	present, conflict := n.scanEntries(&view)
	return conflict == 0 && present == len(view.Entries)
}

// processPendingAcks acknowledges what the durable index now covers. Of the
// messages that became ackable together only the one matching the most is
// acknowledged; the others are dropped (for the spec: the network dropped
// them). Messages that can no longer be acknowledged are dropped.
func (n *Node) processPendingAcks() {
	if len(n.pendingAcks) == 0 {
		return
	}
	best := -1
	var bestMatch, bestCommit uint64
	kept := n.pendingAcks[:0]
	var ready []Message
	for _, m := range n.pendingAcks {
		if !n.ackable(&m) {
			n.traceDrop(&m)
			continue
		}
		match := m.PrevLogIndex + uint64(len(m.Entries))
		if match > n.log.durable {
			kept = append(kept, m)
			continue
		}
		ready = append(ready, m)
		if best < 0 || match > bestMatch || (match == bestMatch && m.LeaderCommit >= bestCommit) {
			best, bestMatch, bestCommit = len(ready)-1, match, m.LeaderCommit
		}
	}
	n.pendingAcks = kept
	for k := range ready {
		if k != best {
			n.traceDrop(&ready[k])
		}
	}
	if best >= 0 {
		n.ackApp(&ready[best])
	}
}

// dropPendingAcks forgets every pending acknowledgment.
func (n *Node) dropPendingAcks() {
	for k := range n.pendingAcks {
		n.traceDrop(&n.pendingAcks[k])
	}
	n.pendingAcks = nil
}

// traceDrop records that a spec message is consumed without a spec step of
// its own: for the spec, the network dropped it.
func (n *Node) traceDrop(m *Message) {
	if n.tr != nil && m.Type.isSpec() {
		n.tr.event("DropMessage", m.From, m, "")
	}
}

// learnedFrom is spec learnedFrom: a peer's leader commit, clamped to
// proven, the last index the message proves this member durably holds
// matching the leader (issue 10 item 5).
func (n *Node) learnedFrom(leaderCommit, proven uint64) uint64 {
	if n.has(BugLearnedCommitUnclamped) {
		return leaderCommit
	}
	return min(leaderCommit, proven)
}
