package raft

import (
	"maps"
	"slices"

	"github.com/durableraft/durableraft/trace"
)

// Repair of a TRUNCATED member from its peers, without a leader: spec
// repair.go (RequestRepair, HandleRepairRequest, HandleRepairResponse),
// docs/repair.md. On with Config.PeerRepair.
//
// The fence release (follower.go, spec FenceReleases) needs a leader of a
// newer term. With two TRUNCATED members of four none can be elected, so a
// TRUNCATED member that has heard no leader for Config.CatchUpTicks (the
// loud permanent fence, boot-policy row 4) repairs itself from its peers:
//
//   - It raises its term past the corruption's if it is not there yet (no
//     campaign: a follower of no leader), and asks every other voter with
//     MsgRepair: its durable tip (LastLogTerm, LastLogIndex) and the index
//     it wants entries after (PrevLogIndex).
//   - A CLEAN peer answers MsgRepairResp with its durable tip and, when its
//     durable log is more up-to-date than the requester's, the entries of
//     its durable log after the probe (PrevLogIndex/PrevLogTerm: at most
//     Config.MsgEntriesMax entries and MsgBytesMax bytes a message).
//   - The requester counts an answer of a term newer than its corruption's
//     once its durable log is at least as up-to-date as the peer's tip:
//     at once when it already is, else after it took the entries (a
//     conflicting suffix is cut, as from a leader) and they are durable. A
//     probe that does not match, or a tip not reached yet, asks again.
//   - Once the voters not counted are not a quorum, the member is CLEAN:
//     TruncatedAtTerm = 0, persisted before any vote leaves.
//
// What the requester holds when it is released is a copy of the most
// up-to-date durable log among peers that meet every quorum, each answered
// in a term no leader of the corruption's term can count acknowledgments
// in any more: spec RepairCovers.

// repairState is the requester's progress: the peers counted, the peer
// answers waiting for the taken entries to be durable (the tip each needs),
// and the ticks since it last asked.
type repairState struct {
	counted map[NodeID]bool
	await   map[NodeID]repairAwait
	elapsed int
}

// repairAwait is a peer's answer taken, waiting for the durable log to
// reach its tip: the answer's term and tip (the trace's message).
type repairAwait struct {
	term uint64
	want tip
}

type tip struct{ term, index uint64 }

// atLeast is Raft's order on log tips: a's last term is newer, or the same
// with an index at least as large.
func (a tip) atLeast(b tip) bool {
	return a.term > b.term || (a.term == b.term && a.index >= b.index)
}

// resetRepair forgets the repair in progress (a new term, a release, a
// crash: the state is volatile, as spec repairFrom).
func (n *Node) resetRepair() {
	n.repair = repairState{}
}

// repairing reports whether the node repairs itself from its peers now: a
// TRUNCATED voter, nothing else wrong with it, no leader heard for
// CatchUpTicks. The leader it last followed may still be named (lead): a
// TRUNCATED member never campaigns, so nothing else forgets a leader that
// went silent without a newer term (sim seed 154: two TRUNCATED of four
// naming the old leader, itself a pre-candidate that can win no pre-vote,
// wedged the cluster); tickRepair forgets it.
func (n *Node) repairing() bool {
	return n.cfg.PeerRepair && n.hs.TruncatedAtTerm != 0 && !n.walFailed && !n.hardStateLost && !n.stateFenced &&
		n.role != RoleLeader && n.leaderSilentTicks >= n.cfg.CatchUpTicks && n.isVoter(n.id)
}

// tickRepair asks the peers not counted yet, every ElectionTick ticks while
// the node is repairing.
func (n *Node) tickRepair() {
	if !n.repairing() {
		return
	}
	if n.repair.counted != nil {
		if n.repair.elapsed++; n.repair.elapsed < n.cfg.ElectionTick {
			return
		}
	}
	if n.hs.Term <= n.hs.TruncatedAtTerm && !n.has(BugRepairIgnoresTerm) {
		// Answers count only from a term newer than the corruption's.
		n.raiseTerm()
	}
	if n.repair.counted == nil {
		n.repair = repairState{counted: map[NodeID]bool{}, await: map[NodeID]repairAwait{}}
	}
	n.lead = None // silent for CatchUpTicks: a follower of no leader (no spec variable)
	n.repair.elapsed = 0
	for _, v := range n.trk.Config.Voters {
		if id := NodeID(v); id != n.id && !n.repair.counted[id] {
			n.askRepair(id, n.log.durable)
		}
	}
}

// raiseTerm takes the node to the next term without a campaign: spec
// Timeout (a candidate of the next term, no vote) then StepDown (a
// follower in it), the two steps the spec takes to the same state; no vote
// is asked, as a TRUNCATED member's own rule 7 would refuse it.
func (n *Node) raiseTerm() {
	n.becomeFollower(None)
	n.role = RoleCandidate
	n.hs.Term, n.hs.Vote = n.hs.Term+1, None
	n.resetElection()
	if n.tr != nil {
		n.tr.event("Timeout", None, nil, "")
	}
	n.dropPendingAcks()
	n.resetRepair()
	n.stepDown()
}

// askRepair sends peer to a MsgRepair for the entries after probe (spec
// RequestRepair).
func (n *Node) askRepair(to NodeID, probe uint64) {
	if n.tr != nil {
		n.tr.event("RequestRepair", to, nil, "")
	}
	t, i := n.log.durableTip()
	n.send(Message{Type: MsgRepair, To: to, Term: n.hs.Term, LastLogTerm: t, LastLogIndex: i, PrevLogIndex: probe})
}

// handleRepair is a peer's answer to a MsgRepair (spec
// HandleRepairRequest): a request of a newer term raises the term first,
// unless the node hears from its leader (a partitioned member must not
// depose a working leader: the lease of the vote requests); a member that
// is not CLEAN says nothing.
func (n *Node) handleRepair(m Message) {
	if m.Term > n.hs.Term {
		if n.inLease() {
			return
		}
		n.updateTerm(&m, None)
	}
	if n.hs.TruncatedAtTerm != 0 || n.hardStateLost || n.stateFenced {
		if n.tr != nil && n.hs.TruncatedAtTerm != 0 {
			n.tr.event("HandleRepairRequest", m.From, &m, "") // not CLEAN: no answer
		}
		return
	}
	dt, di := n.log.durableTip()
	resp := Message{Type: MsgRepairResp, To: m.From, Term: n.hs.Term, LastLogTerm: dt, LastLogIndex: di}
	if !(tip{m.LastLogTerm, m.LastLogIndex}).atLeast(tip{dt, di}) {
		if probe := min(m.PrevLogIndex, di); probe+1 < n.log.first {
			n.repairSnapshot(&m) // the entries after the probe are compacted
			return
		}
		n.repairEntries(&resp, min(m.PrevLogIndex, di))
	}
	if n.tr != nil {
		n.tr.event("HandleRepairRequest", m.From, &m, "") // the answer: the durable log (spec), its tip and a range here
	}
	n.send(resp)
}

// repairSnapshot answers req with this node's snapshot (a MsgSnap the
// driver streams, as a leader's, in MessagesAfterPersist): spec
// SendRepairSnapshot (repairsnap.go), the peer's log up to the snapshot's
// index, which its commit index covers. The requester installs it without
// taking the sender for its leader (spec InstallSnapshot), and asks for
// the entries after it.
func (n *Node) repairSnapshot(req *Message) {
	s, to := n.snaps.snap, req.From
	if s.Index == 0 || s.Index+1 < n.log.first || s.Index > n.log.committed {
		n.alert(AlertStorage, "member %d needs a repair from below my compaction point %d, and no snapshot covers it (snapshot %d)", to, n.log.first-1, s.Index)
		return
	}
	conf := Entry{Index: s.Index, Term: s.Term, Data: EncodeMembership(membershipOf(n.confs.at(s.Index)))}
	m := Message{Type: MsgSnap, From: n.id, To: to, Term: n.hs.Term, PrevLogIndex: s.Index, PrevLogTerm: s.Term, LeaderCommit: n.log.committed,
		Entries: []Entry{conf}}
	if n.tr != nil {
		n.tr.repairSnapshot(req, s.Index)
	}
	// As the entries answer, after the hard state is persisted: a request
	// of a newer term raised this node's term (spec Reply posts it in the
	// window; the driver streams a MsgSnap of MessagesAfterPersist as one
	// of Messages once it may leave).
	n.msgsAfter = append(n.msgsAfter, m)
}

// repairSnapshotFrom reports whether a MsgSnap is a repair's: the node
// repairs itself (TRUNCATED, asking, no leader) and the sender is a voter
// it asked. StepSnapshot then installs it without following the sender.
func (n *Node) repairSnapshotFrom(m *Message) bool {
	return n.cfg.PeerRepair && n.hs.TruncatedAtTerm != 0 && n.repair.counted != nil && n.lead == None &&
		n.role != RoleLeader && n.isVoter(m.From)
}

// repairEntries fills the answer with the durable entries after prev, at
// most MsgEntriesMax and MsgBytesMax. A probe below the compaction point
// starts at it (the requester then needs the snapshot: not yet, the answer
// carries no entries and its probe will not match).
func (n *Node) repairEntries(resp *Message, prev uint64) {
	prev = max(prev, n.log.first-1)
	pt, ok := n.log.term(prev)
	if !ok {
		return
	}
	hi := min(n.log.durable+1, prev+1+uint64(n.cfg.MsgEntriesMax))
	ents, err := n.log.entries(prev+1, hi, n.cfg.MsgBytesMax)
	if err != nil {
		n.alert(AlertStorage, "reading entries [%d, %d) to repair %d: %v", prev+1, hi, resp.To, err)
		return
	}
	resp.PrevLogIndex, resp.PrevLogTerm, resp.Entries = prev, pt, ents
}

// handleRepairResp is the requester taking in a peer's answer (spec
// HandleRepairResponse).
func (n *Node) handleRepairResp(m Message) {
	if m.Term > n.hs.Term {
		n.updateTerm(&m, None)
	}
	if n.hs.TruncatedAtTerm == 0 || n.repair.counted == nil || n.repair.counted[m.From] ||
		(m.Term <= n.hs.TruncatedAtTerm && !n.has(BugRepairIgnoresTerm)) {
		return
	}
	want := tip{m.LastLogTerm, m.LastLogIndex}
	dt, di := n.log.durableTip()
	if (tip{dt, di}).atLeast(want) {
		n.countRepair(m.From, m.Term, want)
		return
	}
	if len(m.Entries) == 0 || !n.log.matchTerm(m.PrevLogIndex, m.PrevLogTerm) {
		// No match at the probe: ask from where the terms agree.
		if m.PrevLogIndex == 0 || m.PrevLogIndex < n.log.first {
			return // below my compaction point, or nothing to take
		}
		n.askRepair(m.From, n.log.findConflictByTerm(m.PrevLogIndex-1, m.PrevLogTerm))
		return
	}
	if !n.takeRepairEntries(&m) {
		return
	}
	last := m.PrevLogIndex + uint64(len(m.Entries))
	if last < want.index {
		n.askRepair(m.From, last) // more to take
		return
	}
	n.repair.await[m.From] = repairAwait{term: m.Term, want: want}
	n.processRepairAwaits()
}

// takeRepairEntries writes the peer's entries into the log: a conflicting
// suffix is cut (never below the commit index), the missing entries are
// appended. It reports whether the log now holds all of them.
func (n *Node) takeRepairEntries(m *Message) bool {
	present, conflict := n.scanEntries(m)
	if conflict > 0 {
		from := m.PrevLogIndex + uint64(conflict)
		if from <= n.log.committed {
			n.alert(AlertProtocol, "repair from %d conflicts at %d, below my commit index %d", m.From, from, n.log.committed)
			return false
		}
		n.log.truncate(from)
		n.truncateConfs(from)
		present = conflict - 1
		if n.tr != nil {
			n.tr.truncateLog(from)
			n.tr.event("HandleRepairResponse", m.From, m, "conflict") // spec take, repairprod.go
		}
	}
	if present < len(m.Entries) {
		n.log.append(m.Entries[present:]...)
		n.noteEntries(m.Entries[present:])
		if n.tr != nil {
			n.tr.appendLog(m.Entries[present:]...)
			n.tr.event("HandleRepairResponse", m.From, m, "append")
		}
	}
	return true
}

// processRepairAwaits counts the answers whose tip the durable log now
// reaches (after an Advance, or at once).
func (n *Node) processRepairAwaits() {
	// In id order: which answers are counted before the release, and so
	// the trace, must not depend on a map's order (a seed replays byte for
	// byte).
	for _, id := range slices.Sorted(maps.Keys(n.repair.await)) {
		a := n.repair.await[id]
		if n.log.durable >= a.want.index && n.log.matchTerm(a.want.index, a.want.term) {
			delete(n.repair.await, id)
			n.countRepair(id, a.term, a.want)
			if n.repair.counted == nil {
				return // released
			}
		}
	}
}

// countRepair counts peer's answer and releases the member once the voters
// not counted are not a quorum (with BugRepairVotesEarly: at the first).
// term and want are the answer's term and tip, for the trace (spec
// HandleRepairResponse's count).
func (n *Node) countRepair(peer NodeID, term uint64, want tip) {
	if !n.isVoter(peer) {
		return
	}
	n.repair.counted[peer] = true
	voters := n.trk.Config.Voters
	released := n.has(BugRepairVotesEarly) || !voters.IsQuorum(func(id uint64) bool { return !n.repair.counted[NodeID(id)] })
	if released {
		n.hs.TruncatedAtTerm, n.hs.Ambiguous = 0, false // an AMBIGUOUS member repairs so too: its mark goes with it
	}
	if n.tr != nil {
		m := Message{Type: MsgRepairResp, From: peer, To: n.id, Term: term, LastLogTerm: want.term, LastLogIndex: want.index}
		n.tr.event("HandleRepairResponse", peer, &m, "")
	}
	if !released {
		return // the voters not counted could still be a quorum that lacks an entry
	}
	n.resetRepair()
	n.evaluatePolicy(false) // reports the release (AlertFenceReleased)
}

// stepRepairSnapshot installs a peer's snapshot during a repair, when the
// log does not already hold or commit its last entry, and asks the peer
// for the entries after it. The snapshot's prefix is committed on the peer,
// so it is every member's; the node follows no one.
func (n *Node) stepRepairSnapshot(m *Message, prefix []trace.Entry) bool {
	if m.Term > n.hs.Term {
		n.updateTerm(m, None)
	}
	index, term := m.PrevLogIndex, m.PrevLogTerm
	if m.Term < n.hs.Term || n.role == RoleCandidate || index <= n.log.committed || n.log.matchTerm(index, term) {
		// An answer of an older term, or to a candidate, is no step (spec
		// InstallSnapshot: a follower of the message's term); one the log
		// covers changes nothing.
		return false
	}
	n.installSnapshot(m, prefix)
	n.askRepair(m.From, index)
	return true
}
