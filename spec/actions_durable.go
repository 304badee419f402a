package spec

// The actions only profile durable has. docs/durable-raft.md explains each.

// Flush is group commit: one fdatasync covers everything appended so far.
//
//	Flush(i) ==
//	    /\ durableLen[i] < Len(log[i]) \/ staleLog[i] /= <<>>
//	    /\ durableLen' = [durableLen EXCEPT ![i] = Len(log[i])]
//	    /\ staleLog'   = [staleLog EXCEPT ![i] = <<>>]
//	    /\ UNCHANGED <<everything else>>
//
// staleLog is non-empty only with -bug truncation-not-synced: a pending
// truncation is something to sync even when nothing was appended after it.
func (m *Machine[T, L, V]) Flush(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if int(s.DurableLen[i]) >= s.Log[i].Len() && s.StaleLog[i].Len() == 0 {
		return
	}
	n := *s
	n.DurableLen[i] = T(s.Log[i].Len())
	n.StaleLog[i] = *new(L)
	emit(n, LabelOf[T, L]{Action: ActFlush, I: i})
}

// keepStaleLog records, with -bug truncation-not-synced, what a suffix
// truncation from s to n leaves on disk until the next flush: the durable log
// before the first such truncation since the last flush (a later one changes
// nothing on disk). A truncation of unsynced entries only leaves nothing.
func (m *Machine[T, L, V]) keepStaleLog(s, n *StateOf[T, L, V], i ServerID) {
	if m.Has(BugTruncationNotSynced) && s.StaleLog[i].Len() == 0 && n.DurableLen[i] < s.DurableLen[i] {
		n.StaleLog[i] = s.Log[i].Prefix(int(s.DurableLen[i]))
	}
}

// Crash replaces raft.tla's Restart: server i loses its volatile state and
// the disk keeps some prefix of its log between the durable prefix and the
// whole log (unsynced writes may survive entirely, in part, or not at all).
// What survives is durable after recovery. currentTerm, votedFor,
// learnedCommit, verdict and truncatedAtTerm are durable hard state.
//
//	Crash(i) ==
//	    /\ crashesLeft > 0
//	    /\ \E k \in durableLen[i]..Len(log[i]) :
//	          /\ log'        = [log EXCEPT ![i] = SubSeq(log[i], 1, k)]
//	          /\ durableLen' = [durableLen EXCEPT ![i] = k]
//	    /\ crashesLeft' = crashesLeft - 1
//	    /\ (volatile state reset as in Restart(i))
//
// With -bug volatile-learned-commit, learnedCommit is not durable: the crash
// also chooses learnedCommit' \in 0..learnedCommit[i]. With -bug
// truncation-not-synced, a pending truncation may also be lost: the log
// comes back as staleLog[i], all of it durable.
func (m *Machine[T, L, V]) Crash(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if s.CrashesLeft == 0 {
		return
	}
	crash := func(l L, k int) {
		for learned := m.learnedCommitMin(s, i); learned <= s.LearnedCommit[i]; learned++ {
			n := *s
			m.resetVolatile(&n, i)
			n.Log[i] = l.Prefix(k)
			n.DurableLen[i] = T(k)
			n.StaleLog[i] = *new(L)
			n.LearnedCommit[i] = learned
			n.CrashesLeft = s.CrashesLeft - 1
			emit(n, LabelOf[T, L]{Action: ActCrash, I: i, Cut: T(k)})
		}
	}
	for k := int(s.DurableLen[i]); k <= s.Log[i].Len(); k++ {
		crash(s.Log[i], k)
	}
	if stale := s.StaleLog[i]; stale.Len() > 0 {
		crash(stale, stale.Len())
	}
}

// Corrupt is a restart whose recovery finds the log broken inside its
// durable prefix: the log is cut at some index below durableLen[i] and the
// verdict becomes TRUNCATED, remembering the term in which it happened.
// The environment corrupts fewer than a quorum of members at once (the
// budget the safety properties allow).
//
//	Corrupt(i) ==
//	    /\ corruptionsLeft > 0
//	    /\ Cardinality({s \in Server : verdict[s] = Truncated} \cup {i}) * 2
//	          <= Cardinality(Server)
//	    /\ \E k \in 0..(durableLen[i] - 1) :
//	          /\ log'        = [log EXCEPT ![i] = SubSeq(log[i], 1, k)]
//	          /\ durableLen' = [durableLen EXCEPT ![i] = k]
//	    /\ verdict'         = [verdict EXCEPT ![i] = Truncated]
//	    /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = currentTerm[i]]
//	    /\ corruptionsLeft' = corruptionsLeft - 1
//	    /\ (volatile state reset as in Restart(i))
//
// With -bug volatile-learned-commit, as in Crash, learnedCommit' \in
// 0..learnedCommit[i].
func (m *Machine[T, L, V]) Corrupt(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if s.CorruptionsLeft == 0 || s.DurableLen[i] == 0 {
		return
	}
	var truncated ServerSet
	for _, k := range m.servers {
		if s.Verdict[k] == Truncated {
			truncated = truncated.With(k)
		}
	}
	if truncated.With(i).Len()*2 > len(m.servers) {
		return
	}
	for k := 0; k < int(s.DurableLen[i]); k++ {
		for learned := m.learnedCommitMin(s, i); learned <= s.LearnedCommit[i]; learned++ {
			n := *s
			m.resetVolatile(&n, i)
			n.Log[i] = s.Log[i].Prefix(k)
			n.DurableLen[i] = T(k)
			n.LearnedCommit[i] = learned
			n.StaleLog[i] = *new(L)
			n.Verdict[i] = Truncated
			n.TruncatedAtTerm[i] = s.CurrentTerm[i]
			n.CorruptionsLeft = s.CorruptionsLeft - 1
			emit(n, LabelOf[T, L]{Action: ActCorrupt, I: i, Cut: T(k)})
		}
	}
}

// learnedCommitMin is the lowest learnedCommit[i] a restart (Crash or
// Corrupt) may bring back: all of it, since it is durable hard state; with
// -bug volatile-learned-commit, any lower value down to 0.
func (m *Machine[T, L, V]) learnedCommitMin(s *StateOf[T, L, V], i ServerID) T {
	if m.Has(BugVolatileLearnedCommit) {
		return 0
	}
	return s.LearnedCommit[i]
}
