package spec

// Snapshots (docs/snapshots.md, "The spec"): production actions of the
// core's InstallSnapshot and of a restart from a snapshot. Compaction is no
// action at all: it changes nothing of the abstract state (the trace keeps
// every node's whole log), a stutter step.
//
//   - SendSnapshot(i, j, k): a leader sends the prefix of its log up to an
//     index its commit index covers (a snapshot of committed entries, which
//     every future leader holds).
//   - InstallSnapshot(i, j, m): a follower whose log does not hold the
//     snapshot's last entry, and whose commit index is below it, replaces its
//     log with the prefix: all of it committed and durable (the snapshot file
//     is fdatasync'd before the follower's core takes it).
//   - CrashFromSnapshot(i), CorruptFromSnapshot(i): Crash and Corrupt that
//     bring the commit index back to a snapshot's index, at most what it was
//     and what the log keeps: the snapshot's prefix is committed. A
//     corruption the snapshot repairs may keep the whole durable prefix.
//
// The invariants judge them unchanged; SnapshotCommitted (invariants.go)
// says what a snapshot message must carry: committed entries only.

// SendSnapshot is the leader's offer of a snapshot:
//
//	SendSnapshot(i, j, k) ==
//	    /\ i /= j
//	    /\ state[i] = Leader
//	    /\ k \in 1..commitIndex[i]
//	    /\ Send([mtype         |-> InstallSnapshotRequest,
//	             mterm         |-> currentTerm[i],
//	             mentries      |-> SubSeq(log[i], 1, k),
//	             mleaderCommit |-> commitIndex[i],
//	             mlog          |-> log[i],
//	             msource       |-> i,
//	             mdest         |-> j])
//	    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars>>
//
// membership: j is a member of ConfigOf(log[i]). The snapshot is a prefix
// of the log, so it carries its configuration entries: a follower that
// installs it uses ConfigOf(m.mentries) (docs/membership.md).
func (m *Machine[T, L, V]) SendSnapshot(s *StateOf[T, L, V], i, j ServerID, emit EmitOf[T, L, V]) {
	if i == j || s.State[i] != Leader || (m.Membership && !m.isMember(s, i, j)) {
		return
	}
	for k := 1; k <= int(s.CommitIndex[i]); k++ {
		msg := m.snapshotMessage(s, i, j, k)
		n := *s
		n.Send(msg)
		emit(n, LabelOf[T, L]{Action: ActSendSnapshot, I: i, J: j, Msg: msg})
	}
}

func (m *Machine[T, L, V]) snapshotMessage(s *StateOf[T, L, V], i, j ServerID, k int) MessageOf[T, L] {
	msg := MessageOf[T, L]{Mtype: InstallSnapshotRequest, Mterm: s.CurrentTerm[i], Mentries: s.Log[i].Prefix(k),
		MleaderCommit: s.CommitIndex[i], Msource: i, Mdest: j}
	if m.history {
		msg.Mlog = s.Log[i]
	}
	return msg
}

// InstallSnapshot is a follower's install of a snapshot of its term's
// leader (an older term's is dropped, a newer one raises the term first:
// UpdateTerm):
//
//	InstallSnapshot(i, j, m) ==
//	    LET k == Len(m.mentries) IN
//	    /\ m.mtype = InstallSnapshotRequest
//	    /\ m.mterm = currentTerm[i]
//	    /\ state[i] = Follower
//	    /\ k > commitIndex[i]
//	    /\ ~(k <= Len(log[i]) /\ log[i][k].term = m.mentries[k].term)
//	    /\ log'           = [log EXCEPT ![i] = m.mentries]
//	    /\ durableLen'    = [durableLen EXCEPT ![i] = k]
//	    /\ commitIndex'   = [commitIndex EXCEPT ![i] = k]
//	    /\ learnedCommit' = [learnedCommit EXCEPT ![i] = Max({@, LearnedFromSnapshot(m)})]
//	LearnedFromSnapshot(m) == IF "learned-commit-unclamped" \in Bugs THEN m.mleaderCommit
//	                          ELSE Min({m.mleaderCommit, Len(m.mentries)})
//	    /\ <<staleLog', staleDurable'>>[i] =
//	          IF BasePresent(i) THEN <<m.mentries, k>> ELSE <<<< >>, 0>>
//	    /\ UNCHANGED <<messages, currentTerm, state, votedFor, verdict, truncatedAtTerm,
//	                   candidateVars, leaderVars>>
//
// The message stays in the bag: an offer is the leader's driver streaming
// the snapshot file, which may hand the same snapshot to the follower's
// core again (a transfer resumed after the follower restarted, or resent
// after its answer was lost); only the network's DropMessage ends it. A
// snapshot is durable: an install opens no persistence window, and one
// that is open (production) keeps it with the installed log as its base. A
// snapshot whose last entry the log holds, or that the commit index covers,
// changes nothing: the follower takes no step.
func (m *Machine[T, L, V]) InstallSnapshot(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mtype != InstallSnapshotRequest || msg.Mterm != s.CurrentTerm[i] || s.State[i] != Follower {
		return
	}
	k := msg.Mentries.Len()
	log := s.Log[i]
	if k == 0 || T(k) <= s.CommitIndex[i] || (k <= log.Len() && log.Term(k) == msg.Mentries.Term(k)) {
		return
	}
	n := *s
	n.Log[i] = msg.Mentries
	n.DurableLen[i] = T(k)
	n.CommitIndex[i] = T(k)
	learned := msg.MleaderCommit
	if !m.Has(BugLearnedCommitUnclamped) {
		learned = min(learned, T(k)) // what the snapshot proves (issue 10 item 5)
	}
	n.LearnedCommit[i] = max(s.LearnedCommit[i], learned)
	n.StaleLog[i], n.StaleDurable[i] = *new(L), 0
	if m.Production && m.basePresent(s, i) {
		// The window stays open (Persist releases what it holds), over
		// the installed log as its base: the snapshot is durable.
		n.StaleLog[i], n.StaleDurable[i] = msg.Mentries, T(k)
	}
	emit(n, LabelOf[T, L]{Action: ActInstallSnapshot, I: i, J: j, Msg: msg})
}

// CrashFromSnapshot is Crash with the commit index coming back as a
// snapshot's index c, 1 <= c <= Min({commitIndex[i], k}) for the kept
// length k: what the node had committed before the crash and its log
// still holds.
//
//	CrashFromSnapshot(i) == Crash(i) with
//	    commitIndex' = [commitIndex EXCEPT ![i] = c] for some such c
func (m *Machine[T, L, V]) CrashFromSnapshot(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	m.Crash(s, i, func(n StateOf[T, L, V], l LabelOf[T, L]) {
		keepCommit(s, i, n, l, ActCrashFromSnapshot, emit)
	})
}

// CorruptFromSnapshot is Corrupt with the commit index back as a
// snapshot's index (as CrashFromSnapshot), where the cut may also keep the
// whole durable prefix: a restore from the snapshot may lose nothing that
// was durable, and the member is TRUNCATED all the same.
//
//	CorruptFromSnapshot(i) == Corrupt(i) with k \in 1..d.durable (d \in DiskImages(i)) and
//	    commitIndex' = [commitIndex EXCEPT ![i] = c], 1 <= c <= Min({commitIndex[i], k})
func (m *Machine[T, L, V]) CorruptFromSnapshot(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	m.corrupt(s, i, true, func(n StateOf[T, L, V], l LabelOf[T, L]) {
		keepCommit(s, i, n, l, ActCorruptFromSnapshot, emit)
	})
}

// keepCommit emits a restart's successor with every commit index a
// snapshot can bring back.
func keepCommit[T Int, L Seq[T, L], V Voters[L, V]](pre *StateOf[T, L, V], i ServerID, n StateOf[T, L, V], l LabelOf[T, L],
	a Action, emit EmitOf[T, L, V]) {
	for c := T(1); c <= min(pre.CommitIndex[i], l.Cut); c++ {
		x := n
		x.CommitIndex[i] = c
		l.Action = a
		emit(x, l)
	}
}
