package raft

import (
	"errors"
	"slices"
)

// The leader's side of replication: batches, pipelining with flow control,
// heartbeats, the durable commit rule, check-quorum and leadership
// transfer.

func (n *Node) progressOf(id NodeID) *progress {
	k := n.voterIndex(id)
	if k < 0 || n.prs == nil {
		return nil
	}
	return &n.prs[k]
}

// tickLeader: heartbeats every HeartbeatTick; every ElectionTick the
// check-quorum and the end of an unfinished transfer.
func (n *Node) tickLeader() {
	n.heartbeatElapsed++
	n.electionElapsed++
	if n.electionElapsed >= n.cfg.ElectionTick {
		n.electionElapsed = 0
		if n.cfg.CheckQuorum {
			if !n.quorumActive() {
				n.alert(AlertProtocol, "leader of term %d heard from no quorum for %d ticks: stepping down", n.hs.Term, n.cfg.ElectionTick)
				n.stepDown()
				return
			}
			for k := range n.prs {
				n.prs[k].recentActive = false
			}
		}
		if n.transferee != None {
			n.transferee = None // the transfer timed out; accept proposals again
		}
	}
	if n.heartbeatElapsed >= n.cfg.HeartbeatTick {
		n.heartbeatElapsed = 0
		n.bcastHeartbeat()
	}
}

// quorumActive reports whether a quorum (the leader included) was heard
// from since the last check.
func (n *Node) quorumActive() bool {
	c := 0
	for k := range n.prs {
		if n.prs[k].id == n.id || n.prs[k].recentActive {
			c++
		}
	}
	return c >= n.quorum()
}

func (n *Node) bcastAppend() {
	for k := range n.prs {
		if n.prs[k].id != n.id {
			n.sendAppend(&n.prs[k])
		}
	}
}

// bcastHeartbeat sends every follower a heartbeat. A probe unanswered for
// two heartbeats is taken as lost and sent again (a retry earlier than that
// would mostly duplicate a probe still in flight).
func (n *Node) bcastHeartbeat() {
	for k := range n.prs {
		pr := &n.prs[k]
		if pr.id == n.id {
			continue
		}
		n.sendHeartbeat(pr)
		if pr.state == stateProbe && pr.probed {
			if pr.probeAge++; pr.probeAge >= 2 {
				pr.probed = false
				n.sendAppend(pr)
			}
		}
	}
}

// sendAppend sends pr the entries from pr.next on, at most MsgEntriesMax
// and MsgBytesMax, unless flow control pauses it: spec SendAppendEntries
// with prev = next-1. In probe an empty message is sent too: it finds
// where the follower's log matches.
func (n *Node) sendAppend(pr *progress) {
	if pr.paused(&n.cfg) {
		return
	}
	lo := pr.next
	if lo > n.log.last && pr.state == stateReplicate {
		return
	}
	if lo < n.log.first {
		n.sendSnapshot(pr) // the follower needs entries (or a term) below the compaction point
		return
	}
	hi := min(n.log.last+1, lo+uint64(n.cfg.MsgEntriesMax))
	ents, err := n.log.entries(lo, hi, n.cfg.MsgBytesMax)
	if err != nil {
		if errors.Is(err, ErrCompacted) {
			n.sendSnapshot(pr) // storage compacted further than the core was told
		} else {
			n.alert(AlertStorage, "reading entries [%d, %d) for follower %d: %v", lo, hi, pr.id, err)
		}
		return
	}
	prevTerm, ok := n.log.term(lo - 1)
	if !ok {
		n.alert(AlertStorage, "follower %d needs the term of %d, compacted", pr.id, lo-1)
		return
	}
	last := lo - 1 + uint64(len(ents))
	var size uint64
	for _, e := range ents {
		size += uint64(len(e.Data))
	}
	pr.seq++
	m := Message{Type: MsgApp, To: pr.id, Term: n.hs.Term, PrevLogIndex: lo - 1, PrevLogTerm: prevTerm, Entries: ents,
		Commit: min(n.log.committed, last), LeaderCommit: n.log.committed, Round: n.readRound, Seq: pr.seq}
	pr.sent(last, size, len(ents))
	n.sendApp(m)
}

// sendHeartbeat sends an empty AppendEntries at the leader's last index:
// spec SendAppendEntries with prev = Len(log), n = 0. A follower that holds
// the whole log takes the commit index from it; one that lags rejects it,
// which still confirms the leadership (reads, check-quorum) and tells the
// leader where to probe from (entries in flight were lost). At the last
// index, two heartbeats that the spec cannot tell apart (it does not see
// mlog) are sent from the same log, so they are the same spec message: the
// trace checker is not left guessing which one a follower received.
func (n *Node) sendHeartbeat(pr *progress) {
	prev := n.log.last
	pr.seq++
	n.sendApp(Message{Type: MsgApp, To: pr.id, Term: n.hs.Term, PrevLogIndex: prev, PrevLogTerm: n.log.lastTerm(),
		Commit: n.log.committed, LeaderCommit: n.log.committed, Round: n.readRound, Seq: pr.seq})
}

func (n *Node) sendApp(m Message) {
	m.From = n.id
	if n.tr != nil {
		n.tr.event("SendAppendEntries", m.To, &m, "")
	}
	n.send(m)
}

// handleAppResp is spec HandleAppendEntriesResponseMax (for a response of
// the current term to the leader), then flow control.
func (n *Node) handleAppResp(m Message) {
	pr := n.progressOf(m.From)
	if m.Success && m.MatchIndex > n.log.last {
		n.alert(AlertProtocol, "follower %d acknowledged index %d beyond the leader's last %d", m.From, m.MatchIndex, n.log.last)
		return
	}
	if n.tr != nil {
		n.tr.event("HandleAppendEntriesResponseMax", m.From, &m, "")
	}
	pr.recentActive = true
	if m.Round > pr.round {
		pr.round = m.Round
		n.releaseReads()
	}
	if m.Success {
		n.appSuccess(pr, &m)
	} else {
		n.appReject(pr, &m)
	}
	if n.transferee == m.From && pr.match == n.log.last {
		n.sendTimeoutNow(m.From)
	}
	n.sendAppend(pr)
}

func (n *Node) appSuccess(pr *progress, m *Message) {
	pr.successSeq = max(pr.successSeq, m.Seq)
	if m.MatchIndex > pr.match {
		pr.match = m.MatchIndex
		n.maybeCommit()
	}
	pr.freeTo(m.MatchIndex)
	switch pr.state {
	case stateProbe:
		switch {
		case m.MatchIndex+1 < pr.next:
			// An old acknowledgment: the probe is still out.
		case m.MatchIndex >= pr.match:
			pr.becomeReplicate()
		default:
			// The follower is re-acquiring entries it had acknowledged
			// and lost (a corruption): keep probing from what it has.
			pr.becomeProbe(m.MatchIndex + 1)
		}
	case stateReplicate:
		pr.next = max(pr.next, m.MatchIndex+1)
	case stateSnapshot:
		if m.MatchIndex >= pr.pendingSnapshot {
			pr.becomeReplicate() // the follower holds the snapshot: stream from its match
		}
	}
}

// handlePassiveResp takes an AppendEntries response of a member whose hard
// state was lost (MsgAppRespPassive, of the current term) for flow control
// only: where to send from, which inflights are done. It raises no match
// (so no commit), confirms no read round, counts for no check-quorum and
// starts no transfer: that member may have voted for another leader of a
// later term it no longer knows (docs/refinement.md).
func (n *Node) handlePassiveResp(m Message) {
	pr := n.progressOf(m.From)
	if m.Success && m.MatchIndex > n.log.last {
		n.alert(AlertProtocol, "follower %d reported index %d beyond the leader's last %d", m.From, m.MatchIndex, n.log.last)
		return
	}
	if !m.Success {
		n.appReject(pr, &m)
		n.sendAppend(pr)
		return
	}
	pr.successSeq = max(pr.successSeq, m.Seq)
	pr.freeTo(m.MatchIndex)
	switch pr.state {
	case stateProbe:
		switch {
		case m.MatchIndex+1 < pr.next:
			// An old report: the probe is still out.
		case m.MatchIndex >= pr.match:
			pr.becomeReplicate()
			pr.next = m.MatchIndex + 1 // match is not raised
		default:
			pr.becomeProbe(m.MatchIndex + 1)
		}
	case stateReplicate:
		pr.next = max(pr.next, m.MatchIndex+1)
	case stateSnapshot:
		if m.MatchIndex >= pr.pendingSnapshot {
			pr.becomeReplicate()
			pr.next = m.MatchIndex + 1 // match is not raised
		}
	}
	n.sendAppend(pr)
}

// appReject backs off with the follower's hint (fast back-off): the next
// probe starts after the last index whose term is at most the hint's term.
// A rejection older than the latest success is stale and ignored.
func (n *Node) appReject(pr *progress, m *Message) {
	if m.Seq < pr.successSeq || pr.state == stateSnapshot {
		return // stale, or the follower is being sent a snapshot (its heartbeat answers reject)
	}
	hint := min(m.HintIndex, n.log.last)
	next := n.log.findConflictByTerm(hint, m.HintTerm) + 1
	next = max(1, min(next, n.log.last+1))
	if pr.state == stateProbe && next >= pr.next {
		return // nothing new learned; the probe is still out
	}
	pr.becomeProbe(min(next, pr.next))
}

// maybeCommit is spec AdvanceCommitIndex: the largest index a quorum holds
// durably, counting the leader only up to its durable index (the fix of
// the seed's bug-661), commits if it is of the leader's term.
func (n *Node) maybeCommit() {
	q := n.commitQuorumIndex()
	if q <= n.log.committed || n.log.mustTerm(q) != n.hs.Term {
		return
	}
	for i := n.log.committed + 1; i <= q; i++ {
		if n.uncommittedBytes > 0 {
			// Only this leader's own entries count; the no-op is empty.
			n.uncommittedBytes -= min(n.uncommittedBytes, n.entryBytes(i))
		}
	}
	firstOfTerm := n.log.mustTerm(n.log.committed) != n.hs.Term
	n.log.committed = q
	n.hs.LearnedCommit = max(n.hs.LearnedCommit, q)
	if n.tr != nil {
		n.tr.event("AdvanceCommitIndex", None, nil, "")
	}
	if firstOfTerm {
		n.serveWaitingReads()
	}
}

// entryBytes is the data size of entry i when it is still in memory.
func (n *Node) entryBytes(i uint64) uint64 {
	if i > n.log.handed {
		return uint64(len(n.log.unstable[i-n.log.handed-1].Data))
	}
	if cf := n.log.cacheFrom(); i >= cf {
		return uint64(len(n.log.cache[i-cf].Data))
	}
	return 0
}

// commitQuorumIndex is the largest index held by a quorum: the leader at
// its durable index, each follower at its acknowledged match.
func (n *Node) commitQuorumIndex() uint64 {
	vals := n.scratch[:0]
	for k := range n.prs {
		pr := &n.prs[k]
		v := pr.match
		if pr.id == n.id {
			v = n.log.durable
			if n.has(BugSelfCountsAppended) {
				v = n.log.last
			}
		}
		vals = append(vals, v)
	}
	n.scratch = vals
	slices.Sort(vals)
	return vals[len(vals)-n.quorum()]
}

// TransferLeadership hands leadership to a voter: once its durable match
// reaches the leader's last index, the leader tells it to campaign at once
// (MsgTimeoutNow). Proposals are refused until the transfer ends or times
// out after an election timeout.
func (n *Node) TransferLeadership(to NodeID) error {
	defer n.checkInvariants()
	switch {
	case n.walFailed:
		return ErrWALFailed
	case n.role != RoleLeader:
		return ErrNotLeader
	case to == n.id:
		return nil
	case n.voterIndex(to) < 0:
		return errors.New("raft: transfer to a non-voter")
	}
	if n.transferee == to {
		return nil
	}
	n.transferee, n.electionElapsed = to, 0
	pr := n.progressOf(to)
	if pr.match == n.log.last {
		n.sendTimeoutNow(to)
		return nil
	}
	n.sendAppend(pr)
	return nil
}

func (n *Node) sendTimeoutNow(to NodeID) {
	n.send(Message{Type: MsgTimeoutNow, To: to, Term: n.hs.Term})
}
