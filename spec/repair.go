package spec

import "fmt"

// Repair of a TRUNCATED member from its peers, without a leader
// (Config.Repair, docs/repair.md, issue 18).
//
// The fence release (FenceReleases, actions_append.go) repairs a TRUNCATED
// member only through a leader of a newer term that has committed an entry
// of its own term. With two TRUNCATED members of four no leader can be
// elected (two voters, a quorum is three), so nothing ever repairs them
// (impl/raft testdata/four_nodes_truncated.txt). The repair below needs no
// leader and no operator:
//
//   - RequestRepair(i, j): a TRUNCATED i asks peer j for its durable log.
//   - HandleRepairRequest(j, i, m): a CLEAN j answers with its term and its
//     durable log (a snapshot, in the core, when i is behind j's compaction
//     point: the same abstract log); a member that is not CLEAN does not.
//   - HandleRepairResponse(i, j, m): i counts j's answer only if it was
//     given in a term newer than i's corruption (m.mterm >
//     truncatedAtTerm[i]); if j's log is more up-to-date than i's durable
//     log (Raft's order), i takes it, durably; j joins repairFrom[i]. Once
//     the peers that answered meet every quorum (Server \ repairFrom[i] is
//     not a quorum), i is released: CLEAN, it votes again.
//
// Why it is enough (the explorer checks it rather than this paragraph):
// an entry e that i acknowledged and lost was acknowledged in a term t <=
// truncatedAtTerm[i]; if e is ever committed, in term t by some leader,
// it is on a quorum Q of the durable logs, each acknowledged in term t.
// repairFrom[i] meets Q in some CLEAN peer k whose answer, in a term newer
// than t, came after its acknowledgment, so k's answer held e. i's durable
// log is now at least as up-to-date as every answer counted, so, as in
// Raft's election argument, it holds e too. That is RepairCovers.
//
// Why not rejoin as a learner (the wording): a configuration
// change needs a leader to commit it, and the case the fence release does
// not cover is exactly the one in which no leader can be elected. The
// coverage condition above is one peers satisfy without a leader, and it
// leaves the configuration alone (docs/repair.md has the explorer's
// evidence).
//
// Switches: BugRepairVotesEarly releases after the first answer,
// BugRepairIgnoresTerm asks in the corruption's own term and counts answers
// of any term.

// RepairOf is a record of the Repairs history variable: Server was
// released by repair from its peers, with Log as its durable log, after a
// corruption in term Term (truncatedAtTerm before the release).
type RepairOf[T Int, L any] struct {
	Server ServerID
	Term   T
	Log    L
}

// Repair is the explorer's repair record.
type Repair = RepairOf[uint8, Log]

// validateRepair checks the repair constants.
func (c Config) validateRepair() error {
	switch {
	case !c.Repair && c.Bugs&repairBugs != 0:
		return fmt.Errorf("the bugs %v need -repair", repairBugs)
	case c.Repair && (c.Profile != ProfileDurable || c.Membership || c.PowerLosses > 0):
		return fmt.Errorf("-repair: profile durable only, without -membership and power losses")
	}
	return nil
}

// RequestRepair is a TRUNCATED member's request for a peer's durable log:
//
//	RequestRepair(i, j) ==
//	    /\ Repair /\ i /= j
//	    /\ verdict[i] = Truncated /\ j \notin repairFrom[i]
//	    /\ currentTerm[i] > truncatedAtTerm[i]
//	    /\ Send([mtype |-> RepairRequest, mterm |-> currentTerm[i],
//	             msource |-> i, mdest |-> j])
//	    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, repairFrom>>
//
// Its term, like any message's, raises the peer's (UpdateTerm): a repair
// needs the peers' answers of a term newer than the corruption's, so i
// asks only once it is in one itself (a TRUNCATED member reaches one by
// timing out: Timeout is not fenced, and the vote it then asks for is
// refused by its own rule 7; the core raises its term without a
// campaign, which its trace shows as Timeout then StepDown, the same
// state), and its request takes the peers there. In the production
// profile the request, as any message after a hard-state change, waits in
// the persistence window (post).
func (m *Machine[T, L, V]) RequestRepair(s *StateOf[T, L, V], i, j ServerID, emit EmitOf[T, L, V]) {
	if !m.Repair || i == j || s.Verdict[i] != Truncated || s.RepairFrom[i].Has(j) ||
		(s.CurrentTerm[i] <= s.TruncatedAtTerm[i] && !m.Has(BugRepairIgnoresTerm)) {
		return
	}
	n := *s
	m.post(&n, MessageOf[T, L]{Mtype: RepairRequest, Mterm: s.CurrentTerm[i], Msource: i, Mdest: j})
	emit(n, LabelOf[T, L]{Action: ActRequestRepair, I: i, J: j})
}

// HandleRepairRequest is peer i's answer to j's request (a request of a
// newer term raises i's term first: UpdateTerm):
//
//	HandleRepairRequest(i, j, m) ==
//	    /\ m.mterm <= currentTerm[i]
//	    /\ IF verdict[i] = Clean
//	       THEN Reply([mtype |-> RepairResponse, mterm |-> currentTerm[i],
//	                   mentries |-> SubSeq(log[i], 1, durableLen[i]),
//	                   msource |-> i, mdest |-> j], m)
//	       ELSE Discard(m)
//	    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, repairFrom>>
//
// A member that lost entries itself is no witness of what the cluster
// holds; it says nothing.
func (m *Machine[T, L, V]) HandleRepairRequest(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mtype != RepairRequest || msg.Mterm > s.CurrentTerm[i] {
		return
	}
	n := *s
	if s.Verdict[i] == Clean {
		m.reply(&n, MessageOf[T, L]{Mtype: RepairResponse, Mterm: s.CurrentTerm[i],
			Mentries: s.Log[i].Prefix(int(s.DurableLen[i])), Msource: i, Mdest: j}, msg)
	} else {
		n.Discard(msg)
	}
	emit(n, LabelOf[T, L]{Action: ActHandleRepairRequest, I: i, J: j, Msg: msg})
}

// HandleRepairResponse is the TRUNCATED member i taking in peer j's answer
// (an answer of a newer term raises i's term first: UpdateTerm):
//
//	HandleRepairResponse(i, j, m) ==
//	    LET d    == SubSeq(log[i], 1, durableLen[i])
//	        from == repairFrom[i] \cup {j}
//	        new  == IF MoreUpToDate(m.mentries, d) THEN m.mentries ELSE d
//	    IN /\ m.mterm <= currentTerm[i]
//	       /\ Discard(m)
//	       /\ IF verdict[i] = Truncated /\ m.mterm > truncatedAtTerm[i]
//	          THEN /\ log'        = [log EXCEPT ![i] = IF new = d THEN log[i] ELSE new]
//	               /\ durableLen' = [durableLen EXCEPT ![i] = IF new = d THEN @ ELSE Len(new)]
//	               /\ IF (Server \ from) \notin Quorum
//	                  THEN /\ verdict'         = [verdict EXCEPT ![i] = Clean]
//	                       /\ truncatedAtTerm' = [truncatedAtTerm EXCEPT ![i] = 0]
//	                       /\ repairFrom'      = [repairFrom EXCEPT ![i] = {}]
//	                       /\ repairs'         = repairs \cup {[server |-> i,
//	                              term |-> truncatedAtTerm[i], log |-> log'[i]]}
//	                  ELSE repairFrom' = [repairFrom EXCEPT ![i] = from]
//	          ELSE UNCHANGED <<log, durableLen, verdict, truncatedAtTerm, repairFrom>>
//	MoreUpToDate(a, b) == \/ LastTerm(a) > LastTerm(b)
//	                      \/ LastTerm(a) = LastTerm(b) /\ Len(a) > Len(b)
//
// Taking the answer replaces the whole log, its unsynced suffix included
// (never acknowledged), and the core makes it durable before it counts the
// answer: in the production profile the take and the count are separate
// steps, as the core does them (repairprod.go). commitIndex is left as it is: every entry it covers is in the
// more up-to-date log (StateMachineSafety would say otherwise).
func (m *Machine[T, L, V]) HandleRepairResponse(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mtype != RepairResponse || msg.Mterm > s.CurrentTerm[i] {
		return
	}
	n := *s
	n.Discard(msg)
	label := LabelOf[T, L]{Action: ActHandleRepairResponse, I: i, J: j, Msg: msg}
	if s.Verdict[i] != Truncated || (msg.Mterm <= s.TruncatedAtTerm[i] && !m.Has(BugRepairIgnoresTerm)) {
		emit(n, label)
		return
	}
	if d := s.Log[i].Prefix(int(s.DurableLen[i])); moreUpToDate(msg.Mentries, d) {
		if m.Production {
			m.takeRepair(s, i, j, msg, emit) // repairprod.go: take now, count once durable
			return
		}
		n.Log[i] = msg.Mentries
		n.DurableLen[i] = T(msg.Mentries.Len())
		n.StaleLog[i] = *new(L)
	}
	m.countRepair(s, &n, i, j, label, emit)
}

// countRepair counts j's answer, with n the state after its log was taken,
// and releases i once the peers counted meet every quorum.
func (m *Machine[T, L, V]) countRepair(s, np *StateOf[T, L, V], i, j ServerID, label LabelOf[T, L], emit EmitOf[T, L, V]) {
	n := *np
	from := s.RepairFrom[i].With(j)
	if !m.repairedBy(from) {
		n.RepairFrom[i] = from
		emit(n, label)
		return
	}
	if m.history {
		n.Repairs = insertSorted(s.Repairs, RepairOf[T, L]{Server: i, Term: s.TruncatedAtTerm[i], Log: n.Log[i].Prefix(int(n.DurableLen[i]))}, compareRepair[T, L])
	}
	repaired(&n, i)
	emit(n, label)
}

// repairedBy reports whether the answers of the peers from release the
// member: Server \ from is not a quorum, so from meets every quorum (with
// BugRepairVotesEarly: any one answer).
func (m *Machine[T, L, V]) repairedBy(from ServerSet) bool {
	if m.Has(BugRepairVotesEarly) {
		return from != 0
	}
	var rest ServerSet
	for _, k := range m.servers {
		if !from.Has(k) {
			rest = rest.With(k)
		}
	}
	return !m.Quorum(rest)
}

// moreUpToDate is Raft's order on logs, strict: a's last term is newer, or
// equal with a longer log.
func moreUpToDate[T Int, L Seq[T, L]](a, b L) bool {
	return a.LastTerm() > b.LastTerm() || (a.LastTerm() == b.LastTerm() && a.Len() > b.Len())
}

func compareRepair[T Int, L Seq[T, L]](a, b *RepairOf[T, L]) int {
	switch {
	case a.Server != b.Server:
		return int(a.Server) - int(b.Server)
	case a.Term != b.Term:
		if a.Term < b.Term {
			return -1
		}
		return 1
	}
	return a.Log.Compare(b.Log)
}

// nextRepair emits the RequestRepair steps of s.
func (m *Machine[T, L, V]) nextRepair(s *StateOf[T, L, V], emit EmitOf[T, L, V]) {
	for _, i := range m.servers {
		for _, j := range m.servers {
			m.RequestRepair(s, i, j, emit)
		}
	}
}

// RepairCovers: a member released by repair from its peers was released
// with a durable log that holds every entry committed in a term in which
// its lost acknowledgments may have counted (a term no newer than its
// corruption's), committed before its release or after it. As a voter
// grants only candidates at least as up-to-date as its durable log, a
// repaired member never helps elect a leader lacking an entry it
// acknowledged and a client was told is committed.
//
//	RepairCovers == \A r \in repairs, c \in committed :
//	    c.cterm <= r.term => Len(r.log) >= c.index /\ r.log[c.index].term = c.term
func RepairCovers(m *Model, s *State) string {
	for _, r := range s.Repairs {
		for _, c := range s.Committed {
			if c.CommitTerm <= r.Term && !hasEntry(r.Log, c.Index, c.Term) {
				return fmt.Sprintf("%v was repaired (TRUNCATED at term %d) with %v, without entry (index %d, term %d) committed in term %d",
					r.Server, r.Term, r.Log, c.Index, c.Term, c.CommitTerm)
			}
		}
	}
	return ""
}

// encodeRepair appends the repair variables (Config.Repair only).
func (m *Model) encodeRepair(e encoder, s *State) encoder {
	for _, i := range m.servers {
		e.set(uint8(s.RepairFrom[i]))
	}
	e.uvar(len(s.Repairs))
	for _, r := range s.Repairs {
		e.id(r.Server)
		e.u8(r.Term)
		e.log(r.Log)
	}
	return e
}

// decodeRepair is the inverse of encodeRepair.
func (m *Model) decodeRepair(d *decoder, s *State) {
	for _, i := range m.servers {
		s.RepairFrom[i] = ServerSet(d.u8())
	}
	if n := d.uvar(); n > 0 {
		s.Repairs = make([]Repair, n)
		for k := range s.Repairs {
			s.Repairs[k] = Repair{Server: ServerID(d.u8()), Term: d.u8(), Log: d.log()}
		}
	}
}
