package spec

// PowerLoss in the production profile (issue 10 item 2, the implementation
// side): the impl's tracer logs a boot whose WAL verdict is AMBIGUOUS as
// PowerLoss, and its traces are of the production profile. The disk is one
// of DiskImages(i), as in Crash; the boot is AMBIGUOUS (TRUNCATED stays
// TRUNCATED) and its mark is durable with the cut (impl/wal's Open writes
// it first, as for TRUNCATED: persisted'[i].truncatedAtTerm =
// d.hs.currentTerm).
//
//	PowerLossProduction(i) ==
//	    /\ powerLossesLeft > 0
//	    /\ \E d \in DiskImages(i), c \in 0..learnedCommit[i] :
//	          \/ \E k \in d.durable..Len(d.log) :            \* a torn tail
//	                /\ log'[i] = SubSeq(d.log, 1, k) /\ damaged' = damaged
//	          \/ /\ MayDamage(i)                               \* the last synced flush damaged
//	             /\ \E k \in Min(batchStart[i], d.durable)..(d.durable - 1) :
//	                   log'[i] = SubSeq(d.log, 1, k)
//	             /\ damaged' = damaged \cup {i}
//	    /\ durableLen'[i] = batchStart'[i] = k, learnedCommit'[i] = c
//	    /\ <<currentTerm', votedFor'>>[i] = d.hs, persisted'[i] = d.hs with the mark
//	    /\ verdict'[i] = IF verdict[i] = Truncated THEN Truncated ELSE Ambiguous
//	    /\ truncatedAtTerm'[i] = d.hs.currentTerm
//	    /\ powerLossesLeft' = powerLossesLeft - 1
//
// The damaged cut may fall anywhere in the last synced flush, not only at
// its start: the impl's group commit may write one flush as several
// batches (one per segment it touches, or several WAL cycles reported to
// the core at once), and its recovery cuts at the start of the damaged
// last one. The member counts as damaged either way. (Open: the explorer
// has not been run with the production actions and power losses.)
func (m *Machine[T, L, V]) powerLossProduction(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	damage := m.mayDamage(s, i)
	for _, d := range m.diskImages(s, i) {
		for k := d.durable; k <= d.log.Len(); k++ {
			m.powerLossImage(s, i, d, k, false, emit)
		}
		if !damage {
			continue
		}
		for k := min(int(s.BatchStart[i]), d.durable); k < d.durable; k++ {
			m.powerLossImage(s, i, d, k, true, emit)
		}
	}
}

// PowerLossFromSnapshot is PowerLoss (production) with the commit index
// coming back as a snapshot's index c, 1 <= c <= Min({commitIndex[i], k}),
// as CrashFromSnapshot.
func (m *Machine[T, L, V]) PowerLossFromSnapshot(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if s.PowerLossesLeft == 0 {
		return
	}
	m.powerLossProduction(s, i, func(n StateOf[T, L, V], l LabelOf[T, L]) {
		keepCommit(s, i, n, l, ActPowerLossFromSnapshot, emit)
	})
}

// powerLossImage emits the boot of i from disk image d cut at k, for every
// learnedCommit a restart may bring back.
func (m *Machine[T, L, V]) powerLossImage(s *StateOf[T, L, V], i ServerID, d diskImage[T, L], k int, damage bool, emit EmitOf[T, L, V]) {
	for learned := m.learnedCommitMin(s, i); learned <= s.LearnedCommit[i]; learned++ {
		n := *s
		m.resetVolatile(&n, i)
		m.restarted(&n, i, d.hs)
		n.Log[i] = d.log.Prefix(k)
		n.DurableLen[i] = T(k)
		n.BatchStart[i] = T(k)
		n.LearnedCommit[i] = learned
		if damage {
			n.Damaged = s.Damaged.With(i)
		}
		if !m.Has(BugAmbiguousTailClean) {
			if n.Verdict[i] != Truncated { // the disk's TRUNCATED mark stays (markTruncated)
				n.Verdict[i] = Ambiguous
			}
			n.TruncatedAtTerm[i] = d.hs.CurrentTerm
			n.Persisted[i].TruncatedAtTerm = d.hs.CurrentTerm
		}
		n.PowerLossesLeft = s.PowerLossesLeft - 1
		emit(n, LabelOf[T, L]{Action: ActPowerLoss, I: i, Cut: T(k)})
	}
}
