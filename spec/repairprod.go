package spec

// The repair from peers in the production profile (Config.Repair with
// Config.Production; docs/repair.md, "Traces").
//
// HandleRepairResponse is one atomic step: the member takes the answer's
// log, durably, and counts it. The core does it as a leader's
// AppendEntries is done: it takes a range of the answer (a conflicting
// suffix cut, the missing entries appended), the WAL makes them durable
// (Flush, FlushTo), and it counts the answer once its durable log is at
// least as up-to-date as the answer's. In the production profile
// HandleRepairResponse is therefore split:
//
//   - take (branches conflict and append, the message stays in the bag, as
//     HandleAppendEntriesBatch's): for a range prev+1..last of the answer's
//     log P whose entry prev matches log[i] (or prev = 0), the first entry
//     of the range that conflicts with log[i] cuts log[i] there; without a
//     conflict, the entries of the range log[i] lacks are appended.
//   - count (HandleRepairResponse's own, the message consumed): enabled
//     once P is not more up-to-date than i's durable log; then as in the
//     durable profile with nothing to take.
//
//	TakeRepair(i, j, m, prev, last) ==
//	    /\ verdict[i] = Truncated /\ m.mterm > truncatedAtTerm[i]
//	    /\ MoreUpToDate(m.mentries, SubSeq(log[i], 1, durableLen[i]))
//	    /\ 0 <= prev < last <= Len(m.mentries)
//	    /\ prev = 0 \/ (prev <= Len(log[i]) /\ log[i][prev].term = m.mentries[prev].term)
//	    /\ (HandleAppendEntriesBatch's conflict or append disjunct for
//	        m.mentries[prev+1..last] after prev)
//
// Every state the split reaches is one a leader's AppendEntries of the
// same entries reaches, with the member in the same term: the durable
// profile's invariants judge it unchanged; the count is the atomic step's
// last half.

// takeRepair emits the take steps of i for j's answer msg (P more
// up-to-date than i's durable log, its term counts).
func (m *Machine[T, L, V]) takeRepair(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	log, p := s.Log[i], msg.Mentries
	label := LabelOf[T, L]{Action: ActHandleRepairResponse, I: i, J: j, Msg: msg}
	for prev := 0; prev < p.Len(); prev++ {
		if prev > 0 && (prev > log.Len() || log.Term(prev) != p.Term(prev)) {
			continue
		}
		for last := prev + 1; last <= p.Len(); last++ {
			present, conflict := 0, 0
			for k := 1; prev+k <= last && prev+k <= log.Len(); k++ {
				if log.Term(prev+k) != p.Term(prev+k) {
					conflict = k
					break
				}
				present = k
			}
			n := *s
			switch {
			case conflict > 0:
				keep := prev + conflict - 1
				n.Log[i] = log.Prefix(keep)
				n.DurableLen[i] = min(s.DurableLen[i], T(keep))
				m.keepStaleLog(s, &n, i)
				label.Branch = BranchConflict
			case present < last-prev:
				n.Log[i] = log.Concat(p.SubSeq(prev+present+1, last))
				label.Branch = BranchAppend
			default:
				continue // the range is in log[i] already
			}
			emit(n, label)
		}
	}
}
