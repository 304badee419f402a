package raft

import "github.com/durableraft/durableraft/impl/raft/quorum"

// Elections: pre-vote, the durable vote rules, becoming leader.

// hup starts an election: a pre-vote round when configured (and not a
// leadership transfer), else a real campaign.
func (n *Node) hup(transfer bool) {
	if n.role == RoleLeader {
		return
	}
	if !n.promotable() {
		return // a failed WAL, or a fence evaluatePolicy reports
	}
	if !n.isVoter(n.id) {
		return // a learner or a removed member never campaigns (spec Timeout)
	}
	if n.cfg.PreVote && !transfer {
		n.campaignPre()
		return
	}
	n.campaign(transfer)
}

// advertise is the tip a candidate advertises: its durable tip (spec
// RequestVote, durable rule 4).
func (n *Node) advertise() (lastTerm, lastIndex uint64) {
	lastTerm, lastIndex = n.log.durableTip()
	switch {
	case n.has(BugCandidateAdvertisesAppended):
		lastTerm, lastIndex = n.log.lastTerm(), n.log.last
	case n.has(BugCandidateAdvertisesLearned):
		lastIndex = max(lastIndex, n.hs.LearnedCommit)
	}
	return lastTerm, lastIndex
}

// campaignPre asks for pre-votes for term+1 without raising the term. For
// the spec nothing happens (a pre-candidate is a follower), except that a
// candidate going back to pre-vote is StepDown.
func (n *Node) campaignPre() {
	if n.role == RoleCandidate {
		n.stepDown()
	}
	n.role, n.lead = RolePreCandidate, None
	n.resetVotes()
	n.recordVote(n.id, true, n.markedVoter())
	if n.won() {
		n.campaign(false)
		return
	}
	lastTerm, lastIndex := n.advertise()
	for _, v := range n.trk.Config.Voters {
		if id := NodeID(v); id != n.id {
			n.send(Message{Type: MsgPreVote, To: id, Term: n.hs.Term + 1, LastLogTerm: lastTerm, LastLogIndex: lastIndex})
		}
	}
}

// campaign is spec Timeout(i), then RequestVote(i, i) answered by i itself
// (HandleRequestVoteRequest, HandleRequestVoteResponse), then RequestVote(i,
// j) for every other voter.
func (n *Node) campaign(transfer bool) {
	if n.hs.Term >= TermMax {
		n.alert(AlertProtocol, "term %d at its maximum: not campaigning", n.hs.Term)
		return
	}
	n.becomeFollower(None)
	n.role = RoleCandidate
	n.hs.Term++
	n.hs.Vote = None
	n.resetElection()
	if n.tr != nil {
		n.tr.event("Timeout", None, nil, "")
	}
	n.dropPendingAcks() // of the old term: never acknowledged now
	lastTerm, lastIndex := n.advertise()
	self := Message{Type: MsgVote, From: n.id, To: n.id, Term: n.hs.Term, LastLogTerm: lastTerm, LastLogIndex: lastIndex}
	if n.tr != nil {
		n.tr.event("RequestVote", n.id, nil, "")
	}
	n.handleVote(self)
	for _, v := range n.trk.Config.Voters {
		if id := NodeID(v); id != n.id {
			m := Message{Type: MsgVote, From: n.id, To: id, Term: n.hs.Term, LastLogTerm: lastTerm, LastLogIndex: lastIndex, Transfer: transfer}
			if n.tr != nil {
				n.tr.event("RequestVote", id, nil, "")
			}
			n.send(m)
		}
	}
	if n.role == RoleCandidate && n.won() {
		n.becomeLeader() // a single voter
	}
}

// voteGrant is spec HandleRequestVoteRequest's grant for a request of the
// current term: raft.tla's logOk against the durable log, votedFor, the
// voter floor (the candidate's durable index reaches learnedCommit), and
// the verdict's (a member that is not CLEAN grants marked: ambiguous.go).
func (n *Node) voteGrant(m *Message) bool {
	term, index := n.log.durableTip()
	logOk := m.LastLogTerm > term || (m.LastLogTerm == term && m.LastLogIndex >= index)
	grant := m.Term == n.hs.Term && logOk && (n.hs.Vote == None || n.hs.Vote == m.From)
	if !n.has(BugNoVoterLearnedFloor) && m.LastLogIndex < n.hs.LearnedCommit {
		if grant {
			n.mark(MarkVoteRefusedFloor)
		}
		grant = false
	}
	if n.withholdsVote() {
		grant = false
	}
	if grant && n.truncated() && n.markedVoter() {
		n.mark(MarkVoteMarkedTruncated)
	}
	return grant
}

// inLease reports whether the node heard from a leader within an election
// timeout (CheckQuorum): it then ignores vote requests, so a node coming
// back from a partition cannot depose a leader that a quorum still hears.
func (n *Node) inLease() bool {
	return n.cfg.CheckQuorum && n.lead != None && n.electionElapsed < n.cfg.ElectionTick
}

// handleVote handles a MsgVote (from itself too).
func (n *Node) handleVote(m Message) {
	if m.Term > n.hs.Term && !m.Transfer && m.From != n.id && n.inLease() {
		n.mark(MarkVoteIgnoredInLease)
		n.traceDrop(&m)
		return
	}
	if m.Term > n.hs.Term {
		n.updateTerm(&m, None)
	}
	if n.stateFenced {
		return // no answer: a network that lost the request (the spec's bag keeps it)
	}
	if n.hardStateLost {
		// It may have voted in this term already: no grant, and no answer
		// (a rejection is a spec message, and this node is outside the spec).
		n.votesRefused++
		return
	}
	grant := n.voteGrant(&m)
	if grant {
		n.hs.Vote = m.From
		n.electionElapsed = 0
	}
	if n.tr != nil {
		n.tr.event("HandleRequestVoteRequest", m.From, &m, "")
	}
	resp := Message{Type: MsgVoteResp, From: n.id, To: m.From, Term: n.hs.Term, Granted: grant, Ambiguous: grant && n.markedVoter()}
	if m.From == n.id {
		n.handleVoteResp(resp)
		return
	}
	n.send(resp)
}

// handleVoteResp is spec HandleRequestVoteResponse for a candidate;
// responses a candidate of this term would not tally are dropped.
func (n *Node) handleVoteResp(m Message) {
	switch {
	case m.Term > n.hs.Term:
		n.updateTerm(&m, None)
		n.traceDrop(&m)
		return
	case m.Term < n.hs.Term:
		if n.tr != nil {
			n.tr.event("DropStaleResponse", m.From, &m, "")
		}
		return
	case n.role != RoleCandidate:
		n.traceDrop(&m)
		return
	}
	if n.tr != nil {
		n.tr.event("HandleRequestVoteResponse", m.From, &m, "")
	}
	n.recordVote(m.From, m.Granted, m.Ambiguous)
	if m.From != n.id && n.won() {
		n.becomeLeader()
	}
}

// won reports whether the votes granted form a quorum and the promotion
// fence is open (spec BecomeLeader's guards).
func (n *Node) won() bool {
	if _, _, res := n.trk.TallyVotes(); n.hardStateLost || n.stateFenced || res != quorum.VoteWon || !n.electedBy() {
		return false
	}
	if n.role == RolePreCandidate {
		return true
	}
	if !n.fenceOpen() {
		n.alert(AlertFenced, "won the election of term %d but the promotion fence is closed: durable tip %d below the learned commit (high-water mark) %d, or TRUNCATED at term %d",
			n.hs.Term, n.log.durable, n.hs.LearnedCommit, n.hs.TruncatedAtTerm)
		return false
	}
	return true
}

// handlePreVote answers a pre-vote: would this node vote for m.From in
// term m.Term? Nothing changes for the spec.
func (n *Node) handlePreVote(m Message) {
	term, index := n.log.durableTip()
	logOk := m.LastLogTerm > term || (m.LastLogTerm == term && m.LastLogIndex >= index)
	grant := m.Term > n.hs.Term && logOk && !n.inLease()
	if !n.has(BugNoVoterLearnedFloor) && m.LastLogIndex < n.hs.LearnedCommit {
		grant = false
	}
	if n.withholdsVote() {
		grant = false
	}
	if n.hardStateLost {
		grant = false
		n.votesRefused++
	}
	if n.stateFenced {
		grant = false
	}
	resp := Message{Type: MsgPreVoteResp, To: m.From, Term: n.hs.Term, Granted: grant, Ambiguous: grant && n.markedVoter()}
	if grant {
		resp.Term = m.Term
	}
	n.send(resp)
}

// handlePreVoteResp tallies pre-votes for term+1.
func (n *Node) handlePreVoteResp(m Message) {
	if n.role != RolePreCandidate || (m.Granted && m.Term != n.hs.Term+1) {
		return
	}
	if !m.Granted && m.Term > n.hs.Term {
		// The voter is already in the term this node asks for, or later:
		// this node missed a term. A real campaign at term+1 cannot raise
		// anyone's term; its rejections carry the newer term (UpdateTerm).
		n.campaign(false)
		return
	}
	n.recordVote(m.From, m.Granted, m.Ambiguous)
	// A pre-candidate gives up once a majority refused (not as soon as it
	// cannot win: a vote still missing may be a pre-vote in flight).
	switch _, rejected, _ := n.trk.TallyVotes(); {
	case n.won():
		n.campaign(false)
	case rejected >= n.trk.Config.Voters.Size():
		n.role = RoleFollower
	}
}

// becomeLeader is spec BecomeLeader, then ClientRequest of a no-op entry (so
// that the leader commits an entry of its term: the first commit of a term,
// ReadIndex, and the fence release of TRUNCATED members need one).
func (n *Node) becomeLeader() {
	n.becomeFollower(n.id)
	n.role = RoleLeader
	n.repairOnElection()
	if n.tr != nil {
		n.tr.event("BecomeLeader", None, nil, "")
	}
	n.trk.StartLeading(n.log.last + 1)
	n.electionElapsed, n.heartbeatElapsed, n.leaderSilentTicks = 0, 0, 0
	n.appendLeader(nil)
	n.bcastPending = true
	n.maybeCommit()
}

// updateTerm is spec UpdateTerm: a message of a newer term makes the node a
// follower in that term, with no vote.
func (n *Node) updateTerm(m *Message, lead NodeID) {
	n.hs.Term, n.hs.Vote = m.Term, None
	n.becomeFollower(lead)
	n.resetElection()
	if n.tr != nil {
		n.tr.event("UpdateTerm", m.From, m, "")
	}
	n.dropPendingAcks()
}
