package spec

import "fmt"

// Invariant is a state predicate the explorer checks on every state it
// generates. Check returns "" when the invariant holds, else what is wrong.
type Invariant struct {
	Name       string
	Durable    bool // only in profile durable
	Production bool // only with the production actions
	Membership bool // only with membership (membership.go)
	Repair     bool // only with repair from peers (repair.go)
	Check      func(m *Model, s *State) string
}

// Invariants lists every invariant in the order they are checked.
var Invariants = []Invariant{
	{Name: "TypeOK", Check: TypeOK},
	{Name: "ElectionSafety", Check: ElectionSafety},
	{Name: "LogMatching", Check: LogMatching},
	{Name: "LeaderCompleteness", Check: LeaderCompleteness},
	{Name: "StateMachineSafety", Check: StateMachineSafety},
	{Name: "CommittedIsDurable", Durable: true, Check: CommittedIsDurable},
	{Name: "NoAckedLoss", Durable: true, Check: NoAckedLoss},
	{Name: "SnapshotCommitted", Durable: true, Production: true, Check: SnapshotCommitted},
	{Name: "QuorumOverlap", Membership: true, Check: QuorumOverlap},
	{Name: "RepairCovers", Durable: true, Repair: true, Check: RepairCovers},
}

// InvariantsFor returns the invariants of the model's profile, or only the
// named one.
func (m *Model) InvariantsFor(name string) ([]Invariant, error) {
	var out []Invariant
	for _, inv := range Invariants {
		if (inv.Durable && !m.durable()) || (inv.Production && !m.Production) || (inv.Membership && !m.Membership) || (inv.Repair && !m.Repair) {
			continue
		}
		if name == "" || inv.Name == name {
			out = append(out, inv)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no invariant %q in profile %v", name, m.Profile)
	}
	return out, nil
}

// TypeOK checks the shape of the state: the bag and the sets are canonical,
// every per-server value is in range, and the durable variables agree with
// each other. A failure is a bug in this package, not in the protocol.
func TypeOK(m *Model, s *State) string {
	for k := range s.Messages {
		if s.Messages[k].N == 0 {
			return fmt.Sprintf("message %v has count 0", s.Messages[k].M)
		}
		if k > 0 && compareMessage(&s.Messages[k-1].M, &s.Messages[k].M) >= 0 {
			return "messages bag not sorted"
		}
	}
	for _, i := range m.servers {
		if s.State[i] > Leader || int(s.VotedFor[i]) > len(m.servers) {
			return fmt.Sprintf("%v: state or votedFor out of range", i)
		}
		if s.DurableLen[i] > uint8(s.Log[i].Len()) {
			return fmt.Sprintf("%v: durableLen %d > Len(log) %d", i, s.DurableLen[i], s.Log[i].Len())
		}
		if (s.Verdict[i] == Clean) != (s.TruncatedAtTerm[i] == 0) {
			return fmt.Sprintf("%v: verdict %v with truncatedAtTerm %d", i, s.Verdict[i], s.TruncatedAtTerm[i])
		}
		if detail := typeOKWindow(m, s, i); detail != "" {
			return detail
		}
		if detail := typeOKPower(m, s, i); detail != "" {
			return detail
		}
	}
	return ""
}

// typeOKPower checks the variables of power losses (power.go) of server i:
// the last batch starts within the durable log, the ambiguous grants are
// grants, a damaged member is not CLEAN, and all are zero without power
// losses.
func typeOKPower(m *Model, s *State, i ServerID) string {
	switch {
	case s.BatchStart[i] > s.DurableLen[i]:
		return fmt.Sprintf("%v: batchStart %d > durableLen %d", i, s.BatchStart[i], s.DurableLen[i])
	case s.VotesAmbiguous[i]&^s.VotesGranted[i] != 0:
		return fmt.Sprintf("%v: votesAmbiguous %v not within votesGranted %v", i, s.VotesAmbiguous[i].Members(), s.VotesGranted[i].Members())
	case s.Damaged.Has(i) && s.Verdict[i] == Clean && !m.Has(BugAmbiguousTailClean):
		return fmt.Sprintf("%v: damaged but CLEAN", i)
	case m.PowerLosses == 0 && (s.BatchStart[i] != 0 || (s.VotesAmbiguous[i] != 0 && !m.MarkedVotes) || s.Damaged != 0 || s.Verdict[i] == Ambiguous):
		return fmt.Sprintf("%v: power-loss variables set without power losses", i)
	}
	return ""
}

// typeOKWindow checks staleLog and, in the production profile, the
// persistence window's variables of server i.
func typeOKWindow(m *Model, s *State, i ServerID) string {
	if !m.Production {
		if s.StaleLog[i] != "" && (!m.Has(BugTruncationNotSynced) || s.StaleLog[i].Len() <= int(s.DurableLen[i])) {
			return fmt.Sprintf("%v: staleLog %v with durableLen %d", i, s.StaleLog[i], s.DurableLen[i])
		}
		return ""
	}
	if int(s.StaleDurable[i]) > s.StaleLog[i].Len() || (!m.basePresent(s, i) && s.StaleDurable[i] != 0) {
		return fmt.Sprintf("%v: staleDurable %d with staleLog %v", i, s.StaleDurable[i], s.StaleLog[i])
	}
	if len(s.Held[i]) > 0 && !m.WindowOpen(s, i) {
		return fmt.Sprintf("%v: holds %d messages with its window closed", i, len(s.Held[i]))
	}
	for k, e := range s.Held[i] {
		if e.N == 0 || e.M.Msource != i || e.M.Mdest == i || e.M.Mtype == AppendEntriesRequest ||
			(k > 0 && compareMessage(&s.Held[i][k-1].M, &e.M) >= 0) {
			return fmt.Sprintf("%v: held message %v (count %d)", i, e.M, e.N)
		}
	}
	if p := s.Persisted[i]; p.CurrentTerm > s.CurrentTerm[i] || (p.CurrentTerm == s.CurrentTerm[i] && p.VotedFor != Nil && p.VotedFor != s.VotedFor[i]) {
		return fmt.Sprintf("%v: persisted hard state %+v ahead of term %d vote %v", i, p, s.CurrentTerm[i], s.VotedFor[i])
	}
	return ""
}

// ElectionSafety: at most one leader is elected per term.
//
//	ElectionSafety == \A e1, e2 \in elections :
//	                     e1.eterm = e2.eterm => e1.eleader = e2.eleader
func ElectionSafety(m *Model, s *State) string {
	// elections is sorted by eterm first, so equal terms are adjacent.
	for k := 1; k < len(s.Elections); k++ {
		a, b := &s.Elections[k-1], &s.Elections[k]
		if a.Eterm == b.Eterm && a.Eleader != b.Eleader {
			return fmt.Sprintf("term %d elected both %v and %v", a.Eterm, a.Eleader, b.Eleader)
		}
	}
	return ""
}

// logsMatch is the LogMatching property for one pair of logs:
//
//	\A n \in 1..Min({Len(l1), Len(l2)}) :
//	    l1[n].term = l2[n].term => SubSeq(l1, 1, n) = SubSeq(l2, 1, n)
func logsMatch(l1, l2 Log) bool {
	n := min(l1.Len(), l2.Len())
	common := 0
	for common < n && l1.At(common+1) == l2.At(common+1) {
		common++
	}
	for k := common + 1; k <= n; k++ {
		if l1.Term(k) == l2.Term(k) {
			return false
		}
	}
	return true
}

// LogMatching: two logs with an entry of the same index and term are
// identical up to it, over every log ever in the system:
//
//	LogMatching == \A l1, l2 \in allLogs \cup {log[i] : i \in Server} : logsMatch(l1, l2)
//
// Pairs of allLogs were both current logs of earlier states of the same
// behaviour, where the pair was checked, so checking each current log
// against allLogs and the other current logs decides the same formula on
// every reachable state.
func LogMatching(m *Model, s *State) string {
	for _, i := range m.servers {
		for _, j := range m.servers {
			if j > i && !logsMatch(s.Log[i], s.Log[j]) {
				return fmt.Sprintf("logs of %v %v and %v %v", i, s.Log[i], j, s.Log[j])
			}
		}
		for _, l := range s.AllLogs {
			if !logsMatch(s.Log[i], l) {
				return fmt.Sprintf("log of %v %v and earlier log %v", i, s.Log[i], l)
			}
		}
	}
	return ""
}

func isPrefix(prefix, log Log) bool {
	return len(prefix) <= len(log) && log[:len(prefix)] == prefix
}

// committedPrefix is SubSeq(log[i], 1, commitIndex[i]), or false when the
// commit index is beyond the log (itself a safety violation).
func committedPrefix(s *State, i ServerID) (Log, bool) {
	c := int(s.CommitIndex[i])
	if c > s.Log[i].Len() {
		return "", false
	}
	return s.Log[i].Prefix(c), true
}

// LeaderCompleteness: every leader elected in a term after the one in which
// an entry was known committed has that entry. A server's commitIndex was
// set in a term no later than its currentTerm, so:
//
//	LeaderCompleteness == \A i \in Server, e \in elections :
//	    e.eterm > currentTerm[i] =>
//	        IsPrefix(SubSeq(log[i], 1, commitIndex[i]), e.elog)
func LeaderCompleteness(m *Model, s *State) string {
	for _, i := range m.servers {
		committed, ok := committedPrefix(s, i)
		if !ok {
			return fmt.Sprintf("%v: commitIndex %d beyond its log %v", i, s.CommitIndex[i], s.Log[i])
		}
		for k := range s.Elections {
			e := &s.Elections[k]
			if e.Eterm > s.CurrentTerm[i] && !isPrefix(committed, e.Elog) {
				return fmt.Sprintf("leader %v of term %d was elected with %v, without %v committed on %v in term %d",
					e.Eleader, e.Eterm, e.Elog, committed, i, s.CurrentTerm[i])
			}
		}
	}
	return ""
}

// StateMachineSafety: servers never disagree on a committed entry.
//
//	StateMachineSafety == \A i, j \in Server :
//	    \A n \in 1..Min({commitIndex[i], commitIndex[j]}) : log[i][n] = log[j][n]
func StateMachineSafety(m *Model, s *State) string {
	for _, i := range m.servers {
		ci, ok := committedPrefix(s, i)
		if !ok {
			return fmt.Sprintf("%v: commitIndex %d beyond its log %v", i, s.CommitIndex[i], s.Log[i])
		}
		for _, j := range m.servers {
			cj, ok := committedPrefix(s, j)
			if j <= i || !ok {
				continue
			}
			n := 2 * min(ci.Len(), cj.Len())
			if ci[:n] != cj[:n] {
				return fmt.Sprintf("%v committed %v but %v committed %v", i, ci, j, cj)
			}
		}
	}
	return ""
}

// holdsDurably reports whether i's durable prefix contains the entry at
// index with term t.
func holdsDurably(s *State, i ServerID, index, t uint8) bool {
	return s.DurableLen[i] >= index && index >= 1 && s.Log[i].Term(int(index)) == t
}

func hasEntry(log Log, index, t uint8) bool {
	return int(index) <= log.Len() && index >= 1 && log.Term(int(index)) == t
}

// CommittedIsDurable: every committed entry is in the durable prefix of a
// majority, counting as holders the members whose copy a corruption may
// have destroyed and which are not yet repaired (they are what the
// corruption budget allows to be lost):
//
//	CommittedIsDurable == \A c \in committed :
//	    {s \in Server : /\ durableLen[s] >= c.index
//	                    /\ log[s][c.index].term = c.term}
//	      \cup {s \in Server : verdict[s] = Truncated}
//	      \cup {s \in damaged : verdict[s] = Ambiguous}
//	      \cup wiped \in Quorum
//
// power losses: a member whose last synced batch was damaged counts as a
// holder while it is AMBIGUOUS (fenced as power.go's rule has it), not
// once it booted CLEAN (-bug ambiguous-tail-clean).
//
// membership: a quorum of the configuration c was committed in, c.config.
func CommittedIsDurable(m *Model, s *State) string {
	for _, c := range s.Committed {
		var holders ServerSet
		for _, i := range m.servers {
			if holdsDurably(s, i, c.Index, c.Term) || s.Verdict[i] == Truncated || (s.Verdict[i] == Ambiguous && s.Damaged.Has(i)) || s.Wipe.Wiped.Has(i) {
				holders = holders.With(i)
			}
		}
		if (!m.Membership && !m.Quorum(holders)) || (m.Membership && !m.quorumOf(DecodeConfig(c.Config), holders)) {
			return fmt.Sprintf("committed entry (index %d, term %d) is durable only on %v", c.Index, c.Term, holders.Members())
		}
	}
	return ""
}

// NoAckedLoss: an entry a client was told is committed is never lost: it
// stays in the durable log of some server, and every leader of a term after
// the one in which it was committed holds it.
//
//	NoAckedLoss == \A c \in committed :
//	    /\ \E s \in Server : durableLen[s] >= c.index /\ log[s][c.index].term = c.term
//	    /\ \A e \in elections : e.eterm > c.cterm =>
//	           Len(e.elog) >= c.index /\ e.elog[c.index].term = c.term
//	    /\ \A s \in Server : state[s] = Leader /\ currentTerm[s] > c.cterm =>
//	           Len(log[s]) >= c.index /\ log[s][c.index].term = c.term
func NoAckedLoss(m *Model, s *State) string {
	for _, c := range s.Committed {
		somewhere := false
		for _, i := range m.servers {
			if holdsDurably(s, i, c.Index, c.Term) {
				somewhere = true
			}
			if s.State[i] == Leader && s.CurrentTerm[i] > c.CommitTerm && !hasEntry(s.Log[i], c.Index, c.Term) {
				return fmt.Sprintf("leader %v of term %d lacks entry (index %d, term %d) committed in term %d",
					i, s.CurrentTerm[i], c.Index, c.Term, c.CommitTerm)
			}
		}
		if !somewhere {
			return fmt.Sprintf("committed entry (index %d, term %d) is in no server's durable log", c.Index, c.Term)
		}
		for k := range s.Elections {
			e := &s.Elections[k]
			if e.Eterm > c.CommitTerm && !hasEntry(e.Elog, c.Index, c.Term) {
				return fmt.Sprintf("leader %v elected in term %d with %v lacks entry (index %d, term %d) committed in term %d",
					e.Eleader, e.Eterm, e.Elog, c.Index, c.Term, c.CommitTerm)
			}
		}
	}
	return ""
}

// SnapshotCommitted: a snapshot offered carries committed entries only, so
// that a follower that installs it holds nothing a later leader lacks:
//
//	SnapshotCommitted == \A m \in DOMAIN messages : m.mtype = InstallSnapshotRequest =>
//	    \A k \in 1..Len(m.mentries) : \E c \in committed : c.index = k /\ c.term = m.mentries[k].term
func SnapshotCommitted(m *Model, s *State) string {
	for _, e := range s.Messages {
		msg := &e.M
		if msg.Mtype != InstallSnapshotRequest {
			continue
		}
		for k := 1; k <= msg.Mentries.Len(); k++ {
			t := msg.Mentries.Term(k)
			found := false
			for _, c := range s.Committed {
				if int(c.Index) == k && c.Term == t {
					found = true
					break
				}
			}
			if !found {
				return fmt.Sprintf("%v carries entry (index %d, term %d), which is not committed", *msg, k, t)
			}
		}
	}
	return ""
}
