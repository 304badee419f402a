package spec

import "fmt"

// This file transliterates the actions of raft.tla (Ongaro, 2014), one Go
// function per TLA+ operator, each quoting the operator it implements. Where
// profile durable changes an action, the change is marked "durable:" and
// explained in docs/durable-raft.md; the actions only the durable profile
// has are in actions_durable.go.

// resetVolatile is the part of Restart(i) that Crash and Corrupt share:
//
//	/\ state'          = [state EXCEPT ![i] = Follower]
//	/\ votesResponded' = [votesResponded EXCEPT ![i] = {}]
//	/\ votesGranted'   = [votesGranted EXCEPT ![i] = {}]
//	/\ voterLog'       = [voterLog EXCEPT ![i] = [j \in {} |-> <<>>]]
//	/\ nextIndex'      = [nextIndex EXCEPT ![i] = [j \in Server |-> 1]]
//	/\ matchIndex'     = [matchIndex EXCEPT ![i] = [j \in Server |-> 0]]
//	/\ commitIndex'    = [commitIndex EXCEPT ![i] = 0]
//
// With BugRestartForgetsVote, votedFor is volatile too: it comes back Nil.
func (m *Machine[T, L, V]) resetVolatile(n *StateOf[T, L, V], i ServerID) {
	n.State[i] = Follower
	n.VotesResponded[i] = 0
	n.VotesGranted[i] = 0
	n.VotesAmbiguous[i] = 0
	n.VoterLog[i] = *new(V)
	for _, j := range m.servers {
		n.NextIndex[i][j] = 1
		n.MatchIndex[i][j] = 0
	}
	n.CommitIndex[i] = 0
	n.RepairFrom[i] = 0 // repair.go: volatile
	if m.Has(BugRestartForgetsVote) {
		n.VotedFor[i] = Nil
	}
}

// Restart is raft.tla's Restart(i): server i restarts from stable storage,
// losing everything but its currentTerm, votedFor and log.
//
//	Restart(i) == ... (see resetVolatile)
//	    /\ UNCHANGED <<messages, currentTerm, votedFor, log, elections>>
//
// Profile durable replaces it with Crash, which can also lose the unsynced
// suffix of the log.
func (m *Machine[T, L, V]) Restart(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	n := *s
	m.resetVolatile(&n, i)
	emit(n, LabelOf[T, L]{Action: ActRestart, I: i})
}

// Timeout is raft.tla's Timeout(i): server i times out and starts a new
// election.
//
//	Timeout(i) == /\ state[i] \in {Follower, Candidate}
//	              /\ state' = [state EXCEPT ![i] = Candidate]
//	              /\ currentTerm' = [currentTerm EXCEPT ![i] = currentTerm[i] + 1]
//	              /\ votedFor' = [votedFor EXCEPT ![i] = Nil]
//	              /\ votesResponded' = [votesResponded EXCEPT ![i] = {}]
//	              /\ votesGranted'   = [votesGranted EXCEPT ![i] = {}]
//	              /\ voterLog'       = [voterLog EXCEPT ![i] = [j \in {} |-> <<>>]]
//	              /\ UNCHANGED <<messages, leaderVars, logVars>>
//
// membership: only a voter of its own configuration stands for election.
func (m *Machine[T, L, V]) Timeout(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if s.State[i] != Follower && s.State[i] != Candidate {
		return
	}
	if (m.Membership && !m.isVoter(s, i)) || m.passive(s, i) {
		return
	}
	n := *s
	n.State[i] = Candidate
	n.CurrentTerm[i] = s.CurrentTerm[i] + 1
	n.VotedFor[i] = Nil
	n.VotesResponded[i] = 0
	n.VotesGranted[i] = 0
	n.VotesAmbiguous[i] = 0
	n.VoterLog[i] = *new(V)
	emit(n, LabelOf[T, L]{Action: ActTimeout, I: i})
}

// advertisedLog is the log whose last term and length a candidate
// advertises in RequestVote, and the log a voter compares it with.
//
// raft.tla: log[i]. durable: the durable prefix SubSeq(log[i], 1,
// durableLen[i]) — a member may only claim what survives a crash.
func (m *Machine[T, L, V]) advertisedLog(s *StateOf[T, L, V], i ServerID) L {
	if !m.durable() {
		return s.Log[i]
	}
	return s.Log[i].Prefix(int(s.DurableLen[i]))
}

// RequestVote is raft.tla's RequestVote(i, j): candidate i sends j a
// RequestVote request. j = i is allowed, as in raft.tla.
//
//	RequestVote(i, j) ==
//	    /\ state[i] = Candidate
//	    /\ j \notin votesResponded[i]
//	    /\ Send([mtype         |-> RequestVoteRequest,
//	             mterm         |-> currentTerm[i],
//	             mlastLogTerm  |-> LastTerm(log[i]),
//	             mlastLogIndex |-> Len(log[i]),
//	             msource       |-> i,
//	             mdest         |-> j])
//	    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars>>
//
// durable: the candidate advertises its durable tip,
// LastTerm(SubSeq(log[i], 1, durableLen[i])) and durableLen[i].
func (m *Machine[T, L, V]) RequestVote(s *StateOf[T, L, V], i, j ServerID, emit EmitOf[T, L, V]) {
	if s.State[i] != Candidate || s.VotesResponded[i].Has(j) {
		return
	}
	adv := m.advertisedLog(s, i)
	lastLogTerm, lastLogIndex := adv.LastTerm(), T(adv.Len())
	if m.durable() {
		switch {
		case m.Has(BugCandidateAdvertisesAppended):
			lastLogTerm, lastLogIndex = s.Log[i].LastTerm(), T(s.Log[i].Len())
		case m.Has(BugCandidateAdvertisesLearned):
			lastLogIndex = max(lastLogIndex, s.LearnedCommit[i])
		}
	}
	n := *s
	m.post(&n, MessageOf[T, L]{
		Mtype:         RequestVoteRequest,
		Mterm:         s.CurrentTerm[i],
		MlastLogTerm:  lastLogTerm,
		MlastLogIndex: lastLogIndex,
		Msource:       i,
		Mdest:         j,
	})
	emit(n, LabelOf[T, L]{Action: ActRequestVote, I: i, J: j})
}

// AppendEntries is raft.tla's AppendEntries(i, j): leader i sends j an
// AppendEntries request containing up to 1 entry.
//
//	AppendEntries(i, j) ==
//	    /\ i /= j
//	    /\ state[i] = Leader
//	    /\ LET prevLogIndex == nextIndex[i][j] - 1
//	           prevLogTerm == IF prevLogIndex > 0 THEN log[i][prevLogIndex].term ELSE 0
//	           lastEntry == Min({Len(log[i]), nextIndex[i][j]})
//	           entries == SubSeq(log[i], nextIndex[i][j], lastEntry)
//	       IN Send([mtype          |-> AppendEntriesRequest,
//	                mterm          |-> currentTerm[i],
//	                mprevLogIndex  |-> prevLogIndex,
//	                mprevLogTerm   |-> prevLogTerm,
//	                mentries       |-> entries,
//	                mlog           |-> log[i],
//	                mcommitIndex   |-> Min({commitIndex[i], lastEntry}),
//	                msource        |-> i,
//	                mdest          |-> j])
//	    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars>>
//
// durable: the message also carries mleaderCommit |-> commitIndex[i], the
// commit index before the clamp, from which followers learn.
//
// membership: j is a member (voter or learner) of ConfigOf(log[i]).
func (m *Machine[T, L, V]) AppendEntries(s *StateOf[T, L, V], i, j ServerID, emit EmitOf[T, L, V]) {
	if i == j || s.State[i] != Leader {
		return
	}
	if m.Membership && !m.isMember(s, i, j) {
		return
	}
	log := s.Log[i]
	next := int(s.NextIndex[i][j])
	prevLogIndex := next - 1
	assert(prevLogIndex <= log.Len(), "AppendEntries(%v, %v): nextIndex %d beyond Len(log) %d", i, j, next, log.Len())
	var prevLogTerm T
	if prevLogIndex > 0 {
		prevLogTerm = log.Term(prevLogIndex)
	}
	lastEntry := min(log.Len(), next)
	msg := MessageOf[T, L]{
		Mtype:         AppendEntriesRequest,
		Mterm:         s.CurrentTerm[i],
		MprevLogIndex: T(prevLogIndex),
		MprevLogTerm:  prevLogTerm,
		Mentries:      log.SubSeq(next, lastEntry),
		McommitIndex:  min(s.CommitIndex[i], T(lastEntry)),
		Msource:       i,
		Mdest:         j,
	}
	if m.history {
		msg.Mlog = log
	}
	if m.durable() {
		msg.MleaderCommit = s.CommitIndex[i]
	}
	n := *s
	n.Send(msg)
	emit(n, LabelOf[T, L]{Action: ActAppendEntries, I: i, J: j})
}

// BecomeLeader is raft.tla's BecomeLeader(i): candidate i transitions to
// leader.
//
//	BecomeLeader(i) ==
//	    /\ state[i] = Candidate
//	    /\ votesGranted[i] \in Quorum
//	    /\ state'      = [state EXCEPT ![i] = Leader]
//	    /\ nextIndex'  = [nextIndex EXCEPT ![i] = [j \in Server |-> Len(log[i]) + 1]]
//	    /\ matchIndex' = [matchIndex EXCEPT ![i] = [j \in Server |-> 0]]
//	    /\ elections'  = elections \cup
//	                         {[eterm     |-> currentTerm[i],
//	                           eleader   |-> i,
//	                           elog      |-> log[i],
//	                           evotes    |-> votesGranted[i],
//	                           evoterLog |-> voterLog[i]]}
//	    /\ UNCHANGED <<messages, currentTerm, votedFor, candidateVars, logVars>>
//
// durable: the promotion fence, PromotionFenceOpen(i): a TRUNCATED member,
// or one whose durable log is shorter than what it learned as committed,
// cannot become leader.
//
// membership: votesGranted[i] \in Quorum(ConfigOf(log[i])).
//
// power losses (power.go): the grants of AMBIGUOUS voters count only
// towards a unanimous election,
//
//	/\ \/ votesGranted[i] \ votesAmbiguous[i] \in Quorum
//	   \/ votesAmbiguous[i] /= {} /\ votesGranted[i] = Server
//
// and a marked member (MarkedVoter) elected so is repaired (CLEAN).
func (m *Machine[T, L, V]) BecomeLeader(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if s.State[i] != Candidate || !m.quorumIn(s.Log[i], s.VotesGranted[i]) {
		return
	}
	if s.VotesAmbiguous[i] != 0 && !m.electedBy(s.Log[i], s.VotesGranted[i], s.VotesAmbiguous[i]) {
		return
	}
	if m.durable() && !m.Has(BugNoPromotionFence) && !m.promotionFenceOpen(s, i) {
		return
	}
	n := *s
	if s.Verdict[i] == Ambiguous || (m.MarkedVotes && s.Verdict[i] != Clean) {
		repaired(&n, i)
	}
	n.State[i] = Leader
	for _, j := range m.servers {
		n.NextIndex[i][j] = T(s.Log[i].Len() + 1)
		n.MatchIndex[i][j] = 0
	}
	if m.history {
		n.Elections = insertSorted(s.Elections, ElectionOf[T, L, V]{
			Eterm:     s.CurrentTerm[i],
			Eleader:   i,
			Elog:      s.Log[i],
			Evotes:    s.VotesGranted[i],
			EvoterLog: s.VoterLog[i],
		}, compareElection)
	}
	emit(n, LabelOf[T, L]{Action: ActBecomeLeader, I: i})
}

// PromotionFenceOpen is the durable profile's promotion fence: i may become
// leader only with a verdict that is not TRUNCATED and a durable log that
// reaches what it learned as committed. (An AMBIGUOUS candidate needs a
// unanimous election, BecomeLeader.)
func PromotionFenceOpen[T Int, L Seq[T, L], V Voters[L, V]](s *StateOf[T, L, V], i ServerID) bool {
	return s.Verdict[i] != Truncated && s.DurableLen[i] >= s.LearnedCommit[i]
}

// promotionFenceOpen is PromotionFenceOpen, where with MarkedVotes a
// TRUNCATED candidate passes the verdict half: its own grant is marked, so
// BecomeLeader elects it only unanimously (electedBy).
func (m *Machine[T, L, V]) promotionFenceOpen(s *StateOf[T, L, V], i ServerID) bool {
	if m.MarkedVotes {
		return s.DurableLen[i] >= s.LearnedCommit[i]
	}
	return PromotionFenceOpen(s, i)
}

// markedVoter reports whether i's grant is marked (mambiguous): i is
// AMBIGUOUS, or with MarkedVotes not CLEAN (with -bug
// truncated-member-votes a TRUNCATED voter's grant is unmarked: it counts
// as a CLEAN one's).
func (m *Machine[T, L, V]) markedVoter(s *StateOf[T, L, V], i ServerID) bool {
	if m.MarkedVotes && s.Verdict[i] == Truncated {
		return !m.Has(BugTruncatedMemberVotes)
	}
	return s.Verdict[i] == Ambiguous
}

// ClientRequest is raft.tla's ClientRequest(i, v): leader i receives a
// client request to add v to the log.
//
//	ClientRequest(i, v) ==
//	    /\ state[i] = Leader
//	    /\ LET entry == [term  |-> currentTerm[i], value |-> v]
//	           newLog == Append(log[i], entry)
//	       IN  log' = [log EXCEPT ![i] = newLog]
//	    /\ UNCHANGED <<messages, serverVars, candidateVars, leaderVars, commitIndex>>
func (m *Machine[T, L, V]) ClientRequest(s *StateOf[T, L, V], i ServerID, v uint8, emit EmitOf[T, L, V]) {
	if s.State[i] != Leader {
		return
	}
	n := *s
	n.Log[i] = s.Log[i].Append(EntryOf[T]{Term: s.CurrentTerm[i], Value: v})
	emit(n, LabelOf[T, L]{Action: ActClientRequest, I: i, Value: v})
}

// AdvanceCommitIndex is raft.tla's AdvanceCommitIndex(i): leader i advances
// its commitIndex.
//
//	AdvanceCommitIndex(i) ==
//	    /\ state[i] = Leader
//	    /\ LET Agree(index) == {i} \cup {k \in Server : matchIndex[i][k] >= index}
//	           agreeIndexes == {index \in 1..Len(log[i]) : Agree(index) \in Quorum}
//	           newCommitIndex ==
//	              IF /\ agreeIndexes /= {}
//	                 /\ log[i][Max(agreeIndexes)].term = currentTerm[i]
//	              THEN Max(agreeIndexes)
//	              ELSE commitIndex[i]
//	       IN commitIndex' = [commitIndex EXCEPT ![i] = newCommitIndex]
//	    /\ UNCHANGED <<messages, serverVars, candidateVars, leaderVars, log>>
//
// durable: the leader is in Agree(index) only when index <= durableLen[i]
// (the fix of the seed's bug-661); learnedCommit[i] follows commitIndex[i]
// upwards; and committed records every entry the new commit index covers.
//
// membership: Agree(index) \in Quorum(ConfigOf(log[i])): the voters of the
// leader's latest configuration, committed or not (a leader that is not one
// of them does not count itself); committed records the configuration.
func (m *Machine[T, L, V]) AdvanceCommitIndex(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if s.State[i] != Leader {
		return
	}
	log := s.Log[i]
	var cfg MemberConfig
	var cfgValue uint8
	if m.Membership {
		cfg = ConfigOf(m, log)
		cfgValue = cfg.Value()
	}
	agreeMax := 0
	for index := log.Len(); index >= 1; index-- {
		var agree ServerSet
		if !m.durable() || m.Has(BugSelfCountsAppended) || int(s.DurableLen[i]) >= index {
			agree = agree.With(i)
		}
		for _, k := range m.servers {
			if int(s.MatchIndex[i][k]) >= index {
				agree = agree.With(k)
			}
		}
		if (!m.Membership && m.Quorum(agree)) || (m.Membership && m.quorumOf(cfg, agree)) {
			agreeMax = index
			break
		}
	}
	newCommitIndex := s.CommitIndex[i]
	if agreeMax > 0 && log.Term(agreeMax) == m.commitTerm(s, i, agreeMax) {
		newCommitIndex = T(agreeMax)
	}
	n := *s
	n.CommitIndex[i] = newCommitIndex
	if m.durable() {
		n.LearnedCommit[i] = max(s.LearnedCommit[i], newCommitIndex)
		if m.history {
			n.Committed = recordCommitted(s.Committed, log, int(newCommitIndex), s.CurrentTerm[i], cfgValue)
		}
	}
	emit(n, LabelOf[T, L]{Action: ActAdvanceCommitIndex, I: i})
}

// commitTerm is the term that entry index of leader i's log must have for
// AdvanceCommitIndex to commit it: currentTerm[i]; with BugCommitPriorTerm,
// whatever term it has.
func (m *Machine[T, L, V]) commitTerm(s *StateOf[T, L, V], i ServerID, index int) T {
	if m.Has(BugCommitPriorTerm) {
		return s.Log[i].Term(index)
	}
	return s.CurrentTerm[i]
}

// recordCommitted is
//
//	committed \cup {[index |-> x, term |-> log[x].term, cterm |-> t (, config |-> c)] :
//	                x \in {y \in 1..commit : ~\E c \in committed :
//	                          c.index = y /\ c.term = log[y].term}}
//
// so each committed entry is recorded once, with the first term in which a
// leader's commit index covered it.
func recordCommitted[T Int, L Seq[T, L]](committed []CommittedOf[T], log L, commit int, term T, cfg uint8) []CommittedOf[T] {
	for x := 1; x <= commit; x++ {
		t := log.Term(x)
		known := false
		for _, c := range committed {
			if int(c.Index) == x && c.Term == t {
				known = true
				break
			}
		}
		if !known {
			committed = insertSorted(committed, CommittedOf[T]{Index: T(x), Term: t, CommitTerm: term, Config: cfg}, compareCommitted)
		}
	}
	return committed
}

// HandleRequestVoteRequest is raft.tla's HandleRequestVoteRequest(i, j, m):
// server i receives a RequestVote request from server j with
// m.mterm <= currentTerm[i].
//
//	HandleRequestVoteRequest(i, j, m) ==
//	    LET logOk == \/ m.mlastLogTerm > LastTerm(log[i])
//	                 \/ /\ m.mlastLogTerm = LastTerm(log[i])
//	                    /\ m.mlastLogIndex >= Len(log[i])
//	        grant == /\ m.mterm = currentTerm[i]
//	                 /\ logOk
//	                 /\ votedFor[i] \in {Nil, j}
//	    IN /\ m.mterm <= currentTerm[i]
//	       /\ \/ grant  /\ votedFor' = [votedFor EXCEPT ![i] = j]
//	          \/ ~grant /\ UNCHANGED votedFor
//	       /\ Reply([mtype        |-> RequestVoteResponse,
//	                 mterm        |-> currentTerm[i],
//	                 mvoteGranted |-> grant,
//	                 mlog         |-> log[i],
//	                 msource      |-> i,
//	                 mdest        |-> j],
//	                 m)
//	       /\ UNCHANGED <<state, currentTerm, candidateVars, leaderVars, logVars>>
//
// durable: logOk compares with i's durable log; grant also requires
// VoterFloorOk (the candidate's durable index reaches learnedCommit[i]) and
// a verdict that is not TRUNCATED (without MarkedVotes: a TRUNCATED member
// grants no vote until repaired). A marked voter's grant says so
// (mambiguous |-> grant /\ MarkedVoter(i): AMBIGUOUS, TRUNCATED with MarkedVotes).
func (m *Machine[T, L, V]) HandleRequestVoteRequest(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mterm > s.CurrentTerm[i] {
		return
	}
	mine := m.advertisedLog(s, i)
	// The bug switches act through upToDateLen and voteOf, which hold no
	// operator, so that the mutants of the rules (docs/mutation.md) are
	// those of raft.tla's text.
	logOk := msg.MlastLogTerm > mine.LastTerm() ||
		(msg.MlastLogTerm == mine.LastTerm() && int(msg.MlastLogIndex) >= m.upToDateLen(mine))
	grant := msg.Mterm == s.CurrentTerm[i] && logOk && (m.voteOf(s, i) == Nil || m.voteOf(s, i) == j)
	if m.durable() {
		if !m.Has(BugNoVoterLearnedFloor) && msg.MlastLogIndex < s.LearnedCommit[i] {
			grant = false
		}
		if !m.Has(BugTruncatedMemberVotes) && !m.MarkedVotes && s.Verdict[i] == Truncated {
			grant = false
		}
		if m.Has(BugAmbiguousWithholdsVote) && s.Verdict[i] == Ambiguous {
			grant = false
		}
	}
	if m.passive(s, i) {
		grant = false // wipe.go
	}
	n := *s
	if grant {
		n.VotedFor[i] = j
	}
	resp := MessageOf[T, L]{
		Mtype:        RequestVoteResponse,
		Mterm:        s.CurrentTerm[i],
		MvoteGranted: grant,
		Msource:      i,
		Mdest:        j,
		Mambiguous:   grant && m.markedVoter(s, i),
	}
	if m.history {
		resp.Mlog = s.Log[i]
	}
	m.reply(&n, resp, msg)
	emit(n, LabelOf[T, L]{Action: ActHandleRequestVoteRequest, I: i, J: j, Msg: msg})
}

// upToDateLen is the length a candidate's log must reach when its last
// term equals the voter's: Len(mine), or 0 with BugVoteIgnoresLogIndex (the
// index clause always holds).
func (m *Machine[T, L, V]) upToDateLen(mine L) int {
	if m.Has(BugVoteIgnoresLogIndex) {
		return 0
	}
	return mine.Len()
}

// voteOf is votedFor[i] as the grant reads it: Nil with
// BugVoteIgnoresVotedFor (every candidate may have the vote).
func (m *Machine[T, L, V]) voteOf(s *StateOf[T, L, V], i ServerID) ServerID {
	if m.Has(BugVoteIgnoresVotedFor) {
		return Nil
	}
	return s.VotedFor[i]
}

// HandleRequestVoteResponse is raft.tla's HandleRequestVoteResponse(i, j, m):
// server i receives a RequestVote response from server j with
// m.mterm = currentTerm[i]. It tallies votes even when i is no longer a
// candidate; they are not looked at.
//
//	HandleRequestVoteResponse(i, j, m) ==
//	    /\ m.mterm = currentTerm[i]
//	    /\ votesResponded' = [votesResponded EXCEPT ![i] = votesResponded[i] \cup {j}]
//	    /\ \/ /\ m.mvoteGranted
//	          /\ votesGranted' = [votesGranted EXCEPT ![i] = votesGranted[i] \cup {j}]
//	          /\ voterLog' = [voterLog EXCEPT ![i] = voterLog[i] @@ (j :> m.mlog)]
//	       \/ /\ ~m.mvoteGranted
//	          /\ UNCHANGED <<votesGranted, voterLog>>
//	    /\ Discard(m)
//	    /\ UNCHANGED <<serverVars, votedFor, leaderVars, logVars>>
//
// power losses: an AMBIGUOUS grant also joins votesAmbiguous[i].
func (m *Machine[T, L, V]) HandleRequestVoteResponse(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mterm != s.CurrentTerm[i] {
		return
	}
	n := *s
	n.VotesResponded[i] = s.VotesResponded[i].With(j)
	if msg.MvoteGranted {
		n.VotesGranted[i] = s.VotesGranted[i].With(j)
		if msg.Mambiguous {
			n.VotesAmbiguous[i] = s.VotesAmbiguous[i].With(j)
		}
		if m.history {
			n.VoterLog[i] = s.VoterLog[i].With(j, msg.Mlog)
		}
	}
	n.Discard(msg)
	emit(n, LabelOf[T, L]{Action: ActHandleRequestVoteResponse, I: i, J: j, Msg: msg})
}

// HandleAppendEntriesResponse is raft.tla's
// HandleAppendEntriesResponse(i, j, m): server i receives an AppendEntries
// response from server j with m.mterm = currentTerm[i].
//
//	HandleAppendEntriesResponse(i, j, m) ==
//	    /\ m.mterm = currentTerm[i]
//	    /\ \/ /\ m.msuccess \* successful
//	          /\ nextIndex'  = [nextIndex  EXCEPT ![i][j] = m.mmatchIndex + 1]
//	          /\ matchIndex' = [matchIndex EXCEPT ![i][j] = m.mmatchIndex]
//	       \/ /\ \lnot m.msuccess \* not successful
//	          /\ nextIndex' = [nextIndex EXCEPT ![i][j] = Max({nextIndex[i][j] - 1, 1})]
//	          /\ UNCHANGED <<matchIndex>>
//	    /\ Discard(m)
//	    /\ UNCHANGED <<serverVars, candidateVars, logVars, elections>>
func (m *Machine[T, L, V]) HandleAppendEntriesResponse(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mterm != s.CurrentTerm[i] {
		return
	}
	n := *s
	if msg.Msuccess {
		n.NextIndex[i][j] = msg.MmatchIndex + 1
		n.MatchIndex[i][j] = msg.MmatchIndex
	} else {
		n.NextIndex[i][j] = max(s.NextIndex[i][j]-1, 1)
	}
	n.Discard(msg)
	emit(n, LabelOf[T, L]{Action: ActHandleAppendEntriesResponse, I: i, J: j, Msg: msg})
}

// UpdateTerm is raft.tla's UpdateTerm(i, j, m): any RPC with a newer term
// causes the recipient to advance its term first. The message stays in the
// bag so that it can be processed further.
//
//	UpdateTerm(i, j, m) ==
//	    /\ m.mterm > currentTerm[i]
//	    /\ currentTerm'    = [currentTerm EXCEPT ![i] = m.mterm]
//	    /\ state'          = [state       EXCEPT ![i] = Follower]
//	    /\ votedFor'       = [votedFor    EXCEPT ![i] = Nil]
//	    /\ UNCHANGED <<messages, candidateVars, leaderVars, logVars>>
func (m *Machine[T, L, V]) UpdateTerm(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mterm <= s.CurrentTerm[i] {
		return
	}
	n := *s
	n.CurrentTerm[i] = msg.Mterm
	n.State[i] = Follower
	n.VotedFor[i] = Nil
	emit(n, LabelOf[T, L]{Action: ActUpdateTerm, I: i, J: j, Msg: msg})
}

// DropStaleResponse is raft.tla's DropStaleResponse(i, j, m): responses with
// stale terms are ignored.
//
//	DropStaleResponse(i, j, m) ==
//	    /\ m.mterm < currentTerm[i]
//	    /\ Discard(m)
//	    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars>>
func (m *Machine[T, L, V]) DropStaleResponse(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mterm >= s.CurrentTerm[i] {
		return
	}
	n := *s
	n.Discard(msg)
	emit(n, LabelOf[T, L]{Action: ActDropStaleResponse, I: i, J: j, Msg: msg})
}

// Receive is raft.tla's Receive(m), with i = m.mdest and j = m.msource.
//
//	Receive(m) ==
//	    LET i == m.mdest
//	        j == m.msource
//	    IN \/ UpdateTerm(i, j, m)
//	       \/ /\ m.mtype = RequestVoteRequest
//	          /\ HandleRequestVoteRequest(i, j, m)
//	       \/ /\ m.mtype = RequestVoteResponse
//	          /\ \/ DropStaleResponse(i, j, m)
//	             \/ HandleRequestVoteResponse(i, j, m)
//	       \/ /\ m.mtype = AppendEntriesRequest
//	          /\ HandleAppendEntriesRequest(i, j, m)
//	       \/ /\ m.mtype = AppendEntriesResponse
//	          /\ \/ DropStaleResponse(i, j, m)
//	             \/ HandleAppendEntriesResponse(i, j, m)
func (m *Machine[T, L, V]) Receive(s *StateOf[T, L, V], msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	i, j := msg.Mdest, msg.Msource
	m.UpdateTerm(s, i, j, msg, emit)
	switch msg.Mtype {
	case RequestVoteRequest:
		m.HandleRequestVoteRequest(s, i, j, msg, emit)
	case RequestVoteResponse:
		m.DropStaleResponse(s, i, j, msg, emit)
		m.HandleRequestVoteResponse(s, i, j, msg, emit)
	case AppendEntriesRequest:
		m.handleAppendEntriesRequestOrPassive(s, i, j, msg, emit) // wipe.go
	case AppendEntriesResponse:
		m.DropStaleResponse(s, i, j, msg, emit)
		m.HandleAppendEntriesResponse(s, i, j, msg, emit)
	case RepairRequest:
		m.HandleRepairRequest(s, i, j, msg, emit)
		m.SendRepairSnapshot(s, i, j, msg, emit) // repairsnap.go: production only
	case RepairResponse:
		m.HandleRepairResponse(s, i, j, msg, emit)
	default:
		panic(fmt.Sprintf("Receive: message with unknown mtype: %v", msg))
	}
}

// DuplicateMessage is raft.tla's DuplicateMessage(m): the network
// duplicates a message.
//
//	DuplicateMessage(m) ==
//	    /\ Send(m)
//	    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars>>
func (m *Machine[T, L, V]) DuplicateMessage(s *StateOf[T, L, V], msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	n := *s
	n.Send(msg)
	emit(n, LabelOf[T, L]{Action: ActDuplicateMessage, I: msg.Mdest, J: msg.Msource, Msg: msg})
}

// DropMessage is raft.tla's DropMessage(m): the network drops a message.
//
//	DropMessage(m) ==
//	    /\ Discard(m)
//	    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars>>
func (m *Machine[T, L, V]) DropMessage(s *StateOf[T, L, V], msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	n := *s
	n.Discard(msg)
	emit(n, LabelOf[T, L]{Action: ActDropMessage, I: msg.Mdest, J: msg.Msource, Msg: msg})
}

func assert(cond bool, format string, args ...any) {
	if !cond {
		panic("spec: assertion failed: " + fmt.Sprintf(format, args...))
	}
}
