package spec

// Power losses and the ambiguous tail (issue 10 item 2,
// docs/durable-raft.md, "The ambiguous tail").
//
// impl/wal writes a batch only after every earlier batch is fdatasync'd,
// so a valid batch header vouches for everything before it; a seal (an
// empty batch) vouches for the last one. What nothing vouches for is the
// last batch: when recovery finds it damaged, it is either a write torn by
// the power cut before its fdatasync returned (nothing durable lost) or a
// batch that was fdatasync'd, possibly acknowledged, and damaged at rest
// before the next write vouched for it. The bytes cannot tell these apart,
// so both boot with the verdict AMBIGUOUS, the log cut before the batch.
//
// What an AMBIGUOUS member may have lost is the one batch it cannot name,
// so its vote is no evidence that a candidate holds what it acknowledged.
// The rule (protocol-aware recovery: Alagappan et al., FAST '18, decide a
// damaged entry's fate only on the evidence of the others):
//
//   - An AMBIGUOUS voter grants as any voter does, against its durable log,
//     and says so in its response (mambiguous).
//   - A candidate becomes leader on a quorum of grants from voters that are
//     not AMBIGUOUS, or on the grants of every server (unanimous): then
//     every intact copy of every committed entry was in the log of a voter
//     whose durable log the candidate's is at least as up to date as, so
//     the candidate holds every committed entry, whatever the AMBIGUOUS
//     voters lost. The budget below leaves one intact copy of each.
//   - An AMBIGUOUS leader elected so is repaired by its election (CLEAN); an
//     AMBIGUOUS follower as a TRUNCATED one is (FenceReleases, rule 8).
//
// The budget: torn unsynced tails on any member at any time; a synced
// batch damaged only while fewer than a quorum of the members are damaged
// or TRUNCATED and not yet repaired, counting this one (Corrupt counts the
// damaged members too).
//
//	PowerLoss(i) ==
//	    /\ powerLossesLeft > 0
//	    /\ \/ /\ k = durableLen[i]                 \* a torn unsynced tail
//	          /\ damaged' = damaged
//	       \/ /\ batchStart[i] < durableLen[i]     \* the last synced batch damaged
//	          /\ Cardinality(damaged \cup {s \in Server : verdict[s] = Truncated} \cup {i}) * 2
//	                 <= Cardinality(Server)
//	          /\ k = batchStart[i]
//	          /\ damaged' = damaged \cup {i}
//	    /\ log'        = [log EXCEPT ![i] = SubSeq(log[i], 1, k)]
//	    /\ durableLen' = [durableLen EXCEPT ![i] = k]
//	    /\ batchStart' = [batchStart EXCEPT ![i] = k]
//	    /\ verdict'    = [verdict EXCEPT ![i] = IF @ = Truncated THEN Truncated ELSE Ambiguous]
//	    /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = currentTerm[i]]
//	    /\ powerLossesLeft' = powerLossesLeft - 1
//	    /\ (volatile state reset as in Restart(i))
//
// After Open everything kept is vouched for (Open rewrites the last batch
// and seals it), so batchStart' = k. With -bug ambiguous-tail-clean the
// verdict and its mark stay as they were: a CLEAN member boots CLEAN.
func (m *Machine[T, L, V]) PowerLoss(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if s.PowerLossesLeft == 0 {
		return
	}
	if m.Production {
		m.powerLossProduction(s, i, emit) // power_production.go
		return
	}
	m.powerLossTo(s, i, s.DurableLen[i], false, emit)
	if s.BatchStart[i] < s.DurableLen[i] && m.mayDamage(s, i) {
		m.powerLossTo(s, i, s.BatchStart[i], true, emit)
	}
}

// mayDamage is the budget of a damaged synced batch: fewer than a quorum
// of the members damaged or TRUNCATED, i among them.
func (m *Machine[T, L, V]) mayDamage(s *StateOf[T, L, V], i ServerID) bool {
	return s.Damaged.With(i).Len()*2+m.truncatedOutside(s, s.Damaged.With(i))*2 <= len(m.servers)
}

// truncatedOutside counts the TRUNCATED members not in set.
func (m *Machine[T, L, V]) truncatedOutside(s *StateOf[T, L, V], set ServerSet) int {
	n := 0
	for _, j := range m.servers {
		if s.Verdict[j] == Truncated && !set.Has(j) {
			n++
		}
	}
	return n
}

func (m *Machine[T, L, V]) powerLossTo(s *StateOf[T, L, V], i ServerID, k T, damage bool, emit EmitOf[T, L, V]) {
	n := *s
	m.resetVolatile(&n, i)
	n.Log[i] = s.Log[i].Prefix(int(k))
	n.DurableLen[i] = k
	n.BatchStart[i] = k
	n.StaleLog[i] = *new(L)
	if damage {
		n.Damaged = s.Damaged.With(i)
	}
	if !m.Has(BugAmbiguousTailClean) {
		if s.Verdict[i] != Truncated {
			n.Verdict[i] = Ambiguous
		}
		n.TruncatedAtTerm[i] = s.CurrentTerm[i]
	}
	n.PowerLossesLeft = s.PowerLossesLeft - 1
	emit(n, LabelOf[T, L]{Action: ActPowerLoss, I: i, Cut: k})
}

// electedBy reports whether the grants votes of a candidate with log l, of
// which ambiguous are marked (AMBIGUOUS voters, or with MarkedVotes every
// voter that is not CLEAN), elect it: a quorum of the others, or every
// voter (every server; with membership, every voter of ConfigOf(l)).
func (m *Machine[T, L, V]) electedBy(l L, votes, ambiguous ServerSet) bool {
	if m.Membership {
		return m.quorumIn(l, votes&^ambiguous) || (ambiguous != 0 && ConfigOf(m, l).Voters&^votes == 0)
	}
	return m.Quorum(votes&^ambiguous) || (ambiguous != 0 && votes.Len() == len(m.servers))
}

// repaired clears i's fence (FenceReleases, or the unanimous election of an
// AMBIGUOUS member): verdict CLEAN, no longer damaged.
func repaired[T Int, L Seq[T, L], V Voters[L, V]](n *StateOf[T, L, V], i ServerID) {
	n.Verdict[i] = Clean
	n.TruncatedAtTerm[i] = 0
	n.Damaged &^= ServerSet(0).With(i)
	n.RepairFrom[i] = 0 // repair.go
}

// batchStartAt is batchStart'[i] after a restart that keeps k entries, all
// vouched for: k, or 0 (unused) without power losses.
func (m *Machine[T, L, V]) batchStartAt(k T) T {
	if m.PowerLosses == 0 {
		return 0
	}
	return k
}
