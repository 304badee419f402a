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
// In the production profile Flush also needs ~WindowOpen(i): the driver
// reports no progress to a node it holds.
func (m *Machine[T, L, V]) Flush(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if int(s.DurableLen[i]) >= s.Log[i].Len() && s.StaleLog[i].Len() == 0 {
		return
	}
	if m.WindowOpen(s, i) {
		return
	}
	n := *s
	n.DurableLen[i] = T(s.Log[i].Len())
	if m.PowerLosses > 0 {
		n.BatchStart[i] = s.DurableLen[i] // the batch this flush syncs (power.go)
	}
	n.StaleLog[i], n.StaleDurable[i] = *new(L), 0
	emit(n, LabelOf[T, L]{Action: ActFlush, I: i})
}

// keepStaleLog records, with -bug truncation-not-synced, what a suffix
// truncation from s to n leaves on disk until the next flush: the durable log
// before the first such truncation since the last flush (a later one changes
// nothing on disk). A truncation of unsynced entries only leaves nothing.
func (m *Machine[T, L, V]) keepStaleLog(s, n *StateOf[T, L, V], i ServerID) {
	if !m.Production && m.Has(BugTruncationNotSynced) && s.StaleLog[i].Len() == 0 && n.DurableLen[i] < s.DurableLen[i] {
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
// With -bug truncation-not-synced, a pending truncation may also be lost:
// the log comes back as staleLog[i], all of it durable.
//
// In the production profile the disk is one of DiskImages(i) (window.go):
//
//	/\ \E d \in DiskImages(i), k \in d.durable..Len(d.log), c \in 0..learnedCommit[i] :
//	      /\ log' = [log EXCEPT ![i] = SubSeq(d.log, 1, k)] /\ durableLen'[i] = k
//	      /\ <<currentTerm', votedFor', truncatedAtTerm'>>[i] = d.hs /\ persisted'[i] = d.hs
//	      /\ learnedCommit' = [learnedCommit EXCEPT ![i] = c]
//	      /\ held'[i] = EmptyBag /\ staleLog'[i] = << >>
//
// learnedCommit is not hard state there: the WAL keeps it in the log's
// batches, so a restart brings back a lower value, or none.
func (m *Machine[T, L, V]) Crash(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if s.CrashesLeft == 0 {
		return
	}
	for _, d := range m.diskImages(s, i) {
		for k := d.durable; k <= d.log.Len(); k++ {
			for learned := m.learnedCommitMin(s, i); learned <= s.LearnedCommit[i]; learned++ {
				n := *s
				m.resetVolatile(&n, i)
				m.restarted(&n, i, d.hs)
				n.Log[i] = d.log.Prefix(k)
				n.DurableLen[i] = T(k)
				n.BatchStart[i] = m.batchStartAt(T(k)) // Open vouches for what it keeps
				n.LearnedCommit[i] = learned
				n.CrashesLeft = s.CrashesLeft - 1
				emit(n, LabelOf[T, L]{Action: ActCrash, I: i, Cut: T(k)})
			}
		}
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
//	    /\ Cardinality({s \in Server : verdict[s] = Truncated} \cup damaged \cup {i}) * 2
//	          <= Cardinality(Server)
//	    /\ \E k \in 0..(durableLen[i] - 1) :
//	          /\ log'        = [log EXCEPT ![i] = SubSeq(log[i], 1, k)]
//	          /\ durableLen' = [durableLen EXCEPT ![i] = k]
//	    /\ verdict'         = [verdict EXCEPT ![i] = Truncated]
//	    /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = currentTerm[i]]
//	    /\ corruptionsLeft' = corruptionsLeft - 1
//	    /\ (volatile state reset as in Restart(i))
//
// In the production profile the disk is one of DiskImages(i), cut below its
// durable length; learnedCommit' \in 0..learnedCommit[i] as in Crash; and
// the TRUNCATED mark is durable with the cut (persisted'[i].truncatedAtTerm
// = d.hs.currentTerm: wal.Open writes the mark before the cut). With -bug
// mark-after-cut the mark is durable only at the next Persist(i), so a
// crash before it boots the cut log CLEAN.
func (m *Machine[T, L, V]) Corrupt(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	m.corrupt(s, i, false, emit)
}

// corrupt is Corrupt, where with keepDurable the cut k may also be the
// image's whole durable length (CorruptFromSnapshot: a restore from a
// snapshot may lose nothing that was durable).
func (m *Machine[T, L, V]) corrupt(s *StateOf[T, L, V], i ServerID, keepDurable bool, emit EmitOf[T, L, V]) {
	if s.CorruptionsLeft == 0 {
		return
	}
	truncated := s.Damaged | s.Wipe.Wiped // power losses, wipes: the damaged and wiped members lost durable entries too
	for _, k := range m.servers {
		if s.Verdict[k] == Truncated {
			truncated = truncated.With(k)
		}
	}
	if truncated.With(i).Len()*2 > len(m.servers) {
		return
	}
	if m.Membership && !m.configsPresent(s, func(c MemberConfig) bool { return !m.quorumOf(c, truncated.With(i)) }) {
		return // membership: nor a quorum of any configuration of the state
	}
	images := m.diskImages(s, i)
	if !m.Production {
		images = images[:1] // the current log (a stale one is not durable)
	}
	for _, d := range images {
		kMax := d.durable - 1
		if keepDurable {
			kMax = d.durable
		}
		for k := 0; k <= kMax; k++ {
			for learned := m.learnedCommitMin(s, i); learned <= s.LearnedCommit[i]; learned++ {
				n := *s
				m.resetVolatile(&n, i)
				m.restarted(&n, i, d.hs)
				n.Log[i] = d.log.Prefix(k)
				n.DurableLen[i] = T(k)
				n.BatchStart[i] = m.batchStartAt(T(k))
				n.LearnedCommit[i] = learned
				n.Verdict[i] = Truncated
				n.TruncatedAtTerm[i] = d.hs.CurrentTerm
				if m.Production && !m.Has(BugMarkAfterCut) {
					n.Persisted[i].TruncatedAtTerm = d.hs.CurrentTerm
				}
				if m.hardStateDirty(&n, i) {
					n.StaleLog[i] = n.Log[i] // the window's base: the cut log, durable
					n.StaleDurable[i] = T(k)
				}
				n.CorruptionsLeft = s.CorruptionsLeft - 1
				emit(n, LabelOf[T, L]{Action: ActCorrupt, I: i, Cut: T(k)})
			}
		}
	}
}

// learnedCommitMin is the lowest learnedCommit[i] a restart (Crash or
// Corrupt) may bring back: all of it, since it is durable hard state; in
// the production profile any lower value down to 0.
func (m *Machine[T, L, V]) learnedCommitMin(s *StateOf[T, L, V], i ServerID) T {
	if m.Production {
		return 0
	}
	return s.LearnedCommit[i]
}
