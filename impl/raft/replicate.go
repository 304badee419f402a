package raft

import (
	"errors"
	"fmt"

	"github.com/durableraft/durableraft/impl/raft/tracker"
)

// The leader's side of replication: batches, pipelining with flow control,
// heartbeats, the durable commit rule, check-quorum and leadership
// transfer.

// progressOf is the leader's progress of member id, or nil (not leading,
// or id is no member of the configuration in force).
func (n *Node) progressOf(id NodeID) *tracker.Progress { return n.trk.Get(uint64(id)) }

// window is the inflight window per member.
func (n *Node) window() tracker.Window {
	return tracker.Window{MsgsMax: n.cfg.InflightMsgsMax, BytesMax: n.cfg.InflightBytesMax}
}

// followers calls f with the progress of every member but the leader, in
// id order.
func (n *Node) followers(f func(pr *tracker.Progress)) {
	for _, id := range n.trk.Order {
		if NodeID(id) != n.id {
			f(n.trk.Progress[id])
		}
	}
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
			n.followers(func(pr *tracker.Progress) { pr.RecentActive = false })
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

// quorumActive reports whether a quorum of the voters (the leader
// included, when it is one) was heard from since the last check.
func (n *Node) quorumActive() bool { return n.trk.QuorumActive(uint64(n.id)) }

func (n *Node) bcastAppend() { n.followers(n.sendAppend) }

// bcastHeartbeat sends every follower a heartbeat. A probe unanswered for
// two heartbeats is taken as lost and sent again (a retry earlier than that
// would mostly duplicate a probe still in flight).
func (n *Node) bcastHeartbeat() {
	n.followers(func(pr *tracker.Progress) {
		n.sendHeartbeat(pr)
		if pr.State == tracker.StateProbe && pr.Probed {
			if pr.ProbeAge++; pr.ProbeAge >= 2 {
				pr.Probed = false
				n.sendAppend(pr)
			}
		}
	})
}

// sendAppend sends pr the entries from pr.Next on, at most MsgEntriesMax
// and MsgBytesMax, unless flow control pauses it: spec SendAppendEntries
// with prev = next-1. In probe an empty message is sent too: it finds
// where the follower's log matches.
func (n *Node) sendAppend(pr *tracker.Progress) {
	if pr.Paused(n.window()) {
		return
	}
	lo := pr.Next
	if lo > n.log.last && pr.State == tracker.StateReplicate {
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
			n.alert(AlertStorage, "reading entries [%d, %d) for follower %d: %v", lo, hi, pr.ID, err)
		}
		return
	}
	prevTerm, ok := n.log.term(lo - 1)
	if !ok {
		n.alert(AlertStorage, "follower %d needs the term of %d, compacted", pr.ID, lo-1)
		return
	}
	last := lo - 1 + uint64(len(ents))
	var size uint64
	for _, e := range ents {
		size += uint64(len(e.Data))
	}
	pr.Seq++
	m := Message{Type: MsgApp, To: NodeID(pr.ID), Term: n.hs.Term, PrevLogIndex: lo - 1, PrevLogTerm: prevTerm, Entries: ents,
		Commit: min(n.log.committed, last), LeaderCommit: n.log.committed, Round: n.readRound, Seq: pr.Seq}
	pr.Sent(last, size, len(ents))
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
func (n *Node) sendHeartbeat(pr *tracker.Progress) {
	prev := n.log.last
	pr.Seq++
	n.sendApp(Message{Type: MsgApp, To: NodeID(pr.ID), Term: n.hs.Term, PrevLogIndex: prev, PrevLogTerm: n.log.lastTerm(),
		Commit: n.log.committed, LeaderCommit: n.log.committed, Round: n.readRound, Seq: pr.Seq})
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
	pr.RecentActive = true
	if m.Round > pr.Round {
		pr.Round = m.Round
		n.releaseReads()
	}
	if m.Success {
		n.appSuccess(pr, &m)
	} else {
		n.appReject(pr, &m)
	}
	if n.transferee == m.From && pr.Match == n.log.last {
		n.sendTimeoutNow(m.From)
	}
	n.sendAppend(pr)
}

func (n *Node) appSuccess(pr *tracker.Progress, m *Message) {
	pr.SuccessSeq = max(pr.SuccessSeq, m.Seq)
	if m.MatchIndex > pr.Match {
		pr.Match = m.MatchIndex
		n.maybeCommit()
	}
	pr.FreeTo(m.MatchIndex)
	switch pr.State {
	case tracker.StateProbe:
		switch {
		case m.MatchIndex+1 < pr.Next:
			// An old acknowledgment: the probe is still out.
		case m.MatchIndex >= pr.Match:
			pr.BecomeReplicate()
		default:
			// The follower is re-acquiring entries it had acknowledged
			// and lost (a corruption): keep probing from what it has.
			pr.BecomeProbe(m.MatchIndex + 1)
		}
	case tracker.StateReplicate:
		pr.Next = max(pr.Next, m.MatchIndex+1)
	case tracker.StateSnapshot:
		if m.MatchIndex >= pr.PendingSnapshot {
			pr.BecomeReplicate() // the follower holds the snapshot: stream from its match
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
	pr.SuccessSeq = max(pr.SuccessSeq, m.Seq)
	pr.FreeTo(m.MatchIndex)
	switch pr.State {
	case tracker.StateProbe:
		switch {
		case m.MatchIndex+1 < pr.Next:
			// An old report: the probe is still out.
		case m.MatchIndex >= pr.Match:
			pr.BecomeReplicate()
			pr.Next = m.MatchIndex + 1 // match is not raised
		default:
			pr.BecomeProbe(m.MatchIndex + 1)
		}
	case tracker.StateReplicate:
		pr.Next = max(pr.Next, m.MatchIndex+1)
	case tracker.StateSnapshot:
		if m.MatchIndex >= pr.PendingSnapshot {
			pr.BecomeReplicate()
			pr.Next = m.MatchIndex + 1 // match is not raised
		}
	}
	n.sendAppend(pr)
}

// appReject backs off with the follower's hint (fast back-off): the next
// probe starts after the last index whose term is at most the hint's term.
// A rejection older than the latest success is stale and ignored.
func (n *Node) appReject(pr *tracker.Progress, m *Message) {
	if m.Seq < pr.SuccessSeq || pr.State == tracker.StateSnapshot {
		return // stale, or the follower is being sent a snapshot (its heartbeat answers reject)
	}
	hint := min(m.HintIndex, n.log.last)
	next := n.log.findConflictByTerm(hint, m.HintTerm) + 1 // in 1..hint+1, so at most last+1
	if pr.State == tracker.StateProbe && next >= pr.Next {
		return // nothing new learned; the probe is still out
	}
	pr.BecomeProbe(min(next, pr.Next))
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
		// Only this leader's own entries count; the no-op is empty.
		n.uncommittedBytes -= min(n.uncommittedBytes, n.entryBytes(i))
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
//
// Only the voters of the configuration in force count (package quorum):
// a learner's match never does, nor the leader's own once it removed
// itself.
func (n *Node) commitQuorumIndex() uint64 {
	self := n.log.durable
	if n.has(BugSelfCountsAppended) {
		self = n.log.last
	}
	return n.trk.Committed(uint64(n.id), self)
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
	case !n.isVoter(to):
		return fmt.Errorf("%w: transfer to %d", ErrNotVoter, to)
	}
	if n.transferee == to {
		return nil
	}
	n.transferee, n.electionElapsed = to, 0
	pr := n.progressOf(to)
	if pr.Match == n.log.last {
		n.sendTimeoutNow(to)
		return nil
	}
	n.sendAppend(pr)
	return nil
}

func (n *Node) sendTimeoutNow(to NodeID) {
	n.send(Message{Type: MsgTimeoutNow, To: to, Term: n.hs.Term})
}
