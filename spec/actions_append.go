package spec

// HandleAppendEntriesRequest is raft.tla's
// HandleAppendEntriesRequest(i, j, m): server i receives an AppendEntries
// request from server j with m.mterm <= currentTerm[i]. It handles
// m.mentries of length 0 or 1.
//
//	HandleAppendEntriesRequest(i, j, m) ==
//	    LET logOk == \/ m.mprevLogIndex = 0
//	                 \/ /\ m.mprevLogIndex > 0
//	                    /\ m.mprevLogIndex <= Len(log[i])
//	                    /\ m.mprevLogTerm = log[i][m.mprevLogIndex].term
//	    IN /\ m.mterm <= currentTerm[i]
//	       /\ \/ /\ \* reject request
//	                \/ m.mterm < currentTerm[i]
//	                \/ /\ m.mterm = currentTerm[i]
//	                   /\ state[i] = Follower
//	                   /\ \lnot logOk
//	             /\ Reply([mtype |-> AppendEntriesResponse, mterm |-> currentTerm[i],
//	                       msuccess |-> FALSE, mmatchIndex |-> 0,
//	                       msource |-> i, mdest |-> j], m)
//	             /\ UNCHANGED <<serverVars, logVars>>
//	          \/ \* return to follower state
//	             /\ m.mterm = currentTerm[i]
//	             /\ state[i] = Candidate
//	             /\ state' = [state EXCEPT ![i] = Follower]
//	             /\ UNCHANGED <<currentTerm, votedFor, logVars, messages>>
//	          \/ \* accept request
//	             /\ m.mterm = currentTerm[i]
//	             /\ state[i] = Follower
//	             /\ logOk
//	             /\ LET index == m.mprevLogIndex + 1
//	                IN \/ \* already done with request
//	                       /\ \/ m.mentries = << >>
//	                          \/ /\ m.mentries /= << >>
//	                             /\ Len(log[i]) >= index
//	                             /\ log[i][index].term = m.mentries[1].term
//	                       /\ commitIndex' = [commitIndex EXCEPT ![i] = m.mcommitIndex]
//	                       /\ Reply([mtype |-> AppendEntriesResponse, mterm |-> currentTerm[i],
//	                                 msuccess |-> TRUE,
//	                                 mmatchIndex |-> m.mprevLogIndex + Len(m.mentries),
//	                                 msource |-> i, mdest |-> j], m)
//	                       /\ UNCHANGED <<serverVars, log>>
//	                   \/ \* conflict: remove 1 entry
//	                       /\ m.mentries /= << >>
//	                       /\ Len(log[i]) >= index
//	                       /\ log[i][index].term /= m.mentries[1].term
//	                       /\ LET new == [index2 \in 1..(Len(log[i]) - 1) |-> log[i][index2]]
//	                          IN log' = [log EXCEPT ![i] = new]
//	                       /\ UNCHANGED <<serverVars, commitIndex, messages>>
//	                   \/ \* no conflict: append entry
//	                       /\ m.mentries /= << >>
//	                       /\ Len(log[i]) = m.mprevLogIndex
//	                       /\ log' = [log EXCEPT ![i] = Append(log[i], m.mentries[1])]
//	                       /\ UNCHANGED <<serverVars, commitIndex, messages>>
//	       /\ UNCHANGED <<candidateVars, leaderVars>>
//
// The conflict and append branches, and return-to-follower, leave the
// message in the bag: success is replied when it is received again.
//
// durable:
//   - already done replies success only for what is durable:
//     durableLen[i] >= m.mprevLogIndex + Len(m.mentries). Until a Flush(i)
//     the branch is not enabled and the message waits in the bag.
//   - already done also learns learnedCommit[i] := Max(learnedCommit[i],
//     LearnedFrom(m)) (m.mleaderCommit, clamped in the production profile:
//     learnedFrom), and releases the fence of a TRUNCATED member when
//     FenceReleases holds.
//   - conflict clamps durableLen[i] to the shortened log.
func (m *Machine[T, L, V]) HandleAppendEntriesRequest(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mterm > s.CurrentTerm[i] {
		return
	}
	log := s.Log[i]
	prev := int(msg.MprevLogIndex)
	logOk := prev == 0 || (prev <= log.Len() && msg.MprevLogTerm == log.Term(prev))
	if m.Has(BugAppendIgnoresLogOk) {
		logOk = true
	}
	label := LabelOf[T, L]{Action: ActHandleAppendEntriesRequest, I: i, J: j, Msg: msg}
	if !m.rejectOrReturnToFollower(s, i, j, msg, logOk, label, emit) {
		return
	}
	index := prev + 1
	entries := msg.Mentries
	switch {
	case entries.Len() == 0 || (log.Len() >= index && log.Term(index) == entries.Term(1)):
		// already done with request
		matchIndex := prev + entries.Len()
		if m.durable() && !m.Has(BugFollowerAcksAppended) && int(s.DurableLen[i]) < matchIndex {
			return // waits in the bag for Flush(i)
		}
		n := *s
		n.CommitIndex[i] = msg.McommitIndex
		if m.durable() {
			n.LearnedCommit[i] = m.learnedFrom(s, i, msg)
			if s.Verdict[i] != Clean && m.FenceReleases(s, i, msg) {
				repaired(&n, i) // TRUNCATED or AMBIGUOUS (power.go)
			}
		}
		m.reply(&n, MessageOf[T, L]{
			Mtype:       AppendEntriesResponse,
			Mterm:       s.CurrentTerm[i],
			Msuccess:    true,
			MmatchIndex: T(matchIndex),
			Msource:     i,
			Mdest:       j,
		}, msg)
		label.Branch = BranchAlreadyDone
		emit(n, label)
	case log.Len() >= index && log.Term(index) != entries.Term(1):
		// conflict: remove 1 entry
		n := *s
		n.Log[i] = log.Prefix(log.Len() - 1)
		if m.durable() {
			n.DurableLen[i] = min(s.DurableLen[i], T(n.Log[i].Len()))
			n.BatchStart[i] = min(s.BatchStart[i], n.DurableLen[i]) // 0 without power losses
			m.keepStaleLog(s, &n, i)
		}
		label.Branch = BranchConflict
		emit(n, label)
	case log.Len() == prev:
		// no conflict: append entry
		n := *s
		n.Log[i] = log.Append(entries.At(1))
		label.Branch = BranchAppend
		emit(n, label)
	}
}

// rejectOrReturnToFollower takes the first two disjuncts of
// HandleAppendEntriesRequest, which the production batch handler shares,
// and reports whether the third, "accept request", applies:
//
//	\/ /\ \* reject request
//	      \/ m.mterm < currentTerm[i]
//	      \/ /\ m.mterm = currentTerm[i] /\ state[i] = Follower /\ \lnot logOk
//	   /\ Reply([mtype |-> AppendEntriesResponse, mterm |-> currentTerm[i],
//	             msuccess |-> FALSE, mmatchIndex |-> 0, msource |-> i, mdest |-> j], m)
//	\/ \* return to follower state
//	   /\ m.mterm = currentTerm[i] /\ state[i] = Candidate
//	   /\ state' = [state EXCEPT ![i] = Follower]
func (m *Machine[T, L, V]) rejectOrReturnToFollower(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], logOk bool, label LabelOf[T, L], emit EmitOf[T, L, V]) bool {
	if msg.Mterm < s.CurrentTerm[i] || (msg.Mterm == s.CurrentTerm[i] && s.State[i] == Follower && !logOk) {
		n := *s
		m.reply(&n, MessageOf[T, L]{
			Mtype:       AppendEntriesResponse,
			Mterm:       s.CurrentTerm[i],
			Msuccess:    false,
			MmatchIndex: 0,
			Msource:     i,
			Mdest:       j,
		}, msg)
		label.Branch = BranchReject
		emit(n, label)
	}
	if msg.Mterm == s.CurrentTerm[i] && s.State[i] == Candidate {
		n := *s
		n.State[i] = Follower
		label.Branch = BranchReturnToFollower
		emit(n, label)
	}
	return msg.Mterm == s.CurrentTerm[i] && s.State[i] == Follower && logOk
}

// FenceReleases is the rule that repairs a TRUNCATED member i as it accepts
// the AppendEntries request msg (already-done branch, so i durably holds
// log entries 1..msg.mprevLogIndex + Len(msg.mentries), matching the
// leader's):
//
//	FenceReleases(i, m) ==
//	    LET c == m.mleaderCommit IN
//	    /\ m.mterm > truncatedAtTerm[i]
//	    /\ 1 <= c /\ c <= m.mprevLogIndex + Len(m.mentries)
//	    /\ log[i][c].term = m.mterm
//
// The leader's term is newer than any term in which i acknowledged entries
// before it lost them, and that leader has committed an entry of its own
// term, which i now durably holds. Every entry that i's lost
// acknowledgments may have helped commit is in that leader's log before
// its own-term entries, hence below c, hence durable on i again.
// docs/durable-raft.md gives the argument and the counterexample to the
// weaker rule kept as BugReleaseAtLeaderCommit.
func (m *Machine[T, L, V]) FenceReleases(s *StateOf[T, L, V], i ServerID, msg MessageOf[T, L]) bool {
	c := int(msg.MleaderCommit)
	matched := int(msg.MprevLogIndex) + msg.Mentries.Len()
	if m.Has(BugReleaseAtLeaderCommit) {
		return c <= matched
	}
	return msg.Mterm > s.TruncatedAtTerm[i] && c >= 1 && c <= matched && s.Log[i].Term(c) == msg.Mterm
}

// learnedFrom is learnedCommit'[i] when i accepts the AppendEntries
// request msg (already-done branch). In the production profile it is
// clamped to what the message proves, the last index i now durably holds
// matching the leader (issue 10 item 5):
//
//	LearnedFrom(m) == IF Production /\ "learned-commit-unclamped" \notin Bugs
//	                  THEN Min({m.mleaderCommit, m.mprevLogIndex + Len(m.mentries)})
//	                  ELSE m.mleaderCommit
//	learnedCommit' = [learnedCommit EXCEPT ![i] = Max({@, LearnedFrom(m)})]
//
// Unclamped, one corrupted mleaderCommit (CorruptLeaderCommit) raises the
// member's voter floor and closes its promotion fence for ever; clamped,
// the member learns at most its own durable, matching prefix, which keeps
// the fence open and the floor within its own log (docs/durable-raft.md,
// "LeaderCommit from a peer", has the explorer's runs).
func (m *Machine[T, L, V]) learnedFrom(s *StateOf[T, L, V], i ServerID, msg MessageOf[T, L]) T {
	c := msg.MleaderCommit
	if m.Production && !m.Has(BugLearnedCommitUnclamped) {
		c = min(c, msg.MprevLogIndex+T(msg.Mentries.Len()))
	}
	return max(s.LearnedCommit[i], c)
}
