package spec

import (
	"errors"
	"fmt"
)

// Wiped members and the confirmation of a first boot (issue 18,
// docs/membership.md, "A wiped member").
//
// A member whose data directory is emptied and that restarts under its
// old id comes back at term 1 with no vote and an empty log: exactly a
// first boot. It may have voted in a term it no longer knows and may have
// held entries that were acknowledged on its word, so if it votes again
// it may elect a leader lacking a committed entry (TigerBeetle #2767's
// acknowledged write lost). A member cannot tell a wipe from a real first
// boot by itself, so every first boot is UNCONFIRMED (durable: it is
// written with the new data directory) and an unconfirmed member is
// passive: it grants no vote, never campaigns, and its acknowledgments
// count toward no quorum. It asks every other member of the
// configuration; an answer is yes when the answerer
//
//   - is PRISTINE: term 1, no vote, an empty log (the cluster has done
//     nothing it knows of), or
//   - is UNCONFIRMED itself (it has never voted or campaigned), or
//   - KNOWS this incarnation of the asker: it was confirmed with this
//     incarnation's own yes (the genesis race: a slow member whose peers
//     were confirmed, with its answers, and elected a leader before its
//     own answers came back).
//
// Any other answer is no: the cluster is past its first boot and does not
// know this data directory, which is therefore a wipe; the member is
// LOST for good (treated as a lost hard state: passive until an operator
// replaces it under a new id). Yes from every other member CONFIRMS the
// first boot. Why every one and not a quorum (-bug wipe-confirm-quorum):
// with five servers the old incarnation may have voted for a candidate c
// that a quorum of pristine members has not heard of yet; confirmed, the
// new incarnation votes in c's term for another candidate and two leaders
// are elected in one term. Why it is sound: each yes was true at a moment
// after the wipe, and each kind of yes is stable backwards, so at the
// wipe no other member had voted or campaigned; no leader had been
// elected, nothing was committed, and the old incarnation's only effects
// are its own vote for itself and its vote requests still in flight,
// which a fresh member may equally have sent.
//
// The model: answers are atomic reads of the answerer's state at a moment
// of its choosing (the implementation's request and reply, which carry
// the asker's incarnation so that a reply to an older incarnation is
// not taken). An incarnation is what Wipe changes: the answers a server
// collected from i and the records that know i are dropped with i's disk.
// The budget: Wipes steps in all; a wipe only while the wiped and the
// TRUNCATED members, i among them, are fewer than a quorum (Corrupt counts
// the wiped members too); without membership, the production actions and
// power losses (Validate).
//
//	Wipe(i) ==
//	    /\ wipesLeft > 0
//	    /\ Cardinality(wiped \cup {s \in Server : verdict[s] = Truncated} \cup {i}) * 2 <= Cardinality(Server)
//	    /\ currentTerm' = [currentTerm EXCEPT ![i] = 1] /\ votedFor' = [votedFor EXCEPT ![i] = Nil]
//	    /\ log' = [log EXCEPT ![i] = << >>] /\ durableLen'[i] = 0 /\ learnedCommit'[i] = 0
//	    /\ verdict'[i] = Clean /\ truncatedAtTerm'[i] = 0
//	    /\ messages' = [m \in {m \in DOMAIN messages : m.msource /= i \/ m.mdest /= i} |-> messages[m]]
//	    /\ wiped' = wiped \cup {i} /\ wipesLeft' = wipesLeft - 1
//	    /\ unconfirmed' = unconfirmed \cup {i} /\ lost' = lost \ {i}
//	    /\ answered' = [k \in Server |-> IF k = i THEN {} ELSE answered[k] \ {i}]
//	    /\ known'    = [k \in Server |-> IF k = i THEN {} ELSE known[k] \ {i}]
//	    /\ (volatile state reset as in Restart(i))
//
//	AnswerFirstBoot(i, j) ==
//	    /\ i \in unconfirmed /\ j /= i /\ j \notin answered[i]
//	    /\ IF Pristine(j) \/ j \in unconfirmed \/ i \in known[j]
//	       THEN answered' = [answered EXCEPT ![i] = @ \cup {j}] /\ UNCHANGED lost
//	       ELSE lost' = lost \cup {i} /\ unconfirmed' = unconfirmed \ {i}
//
//	ConfirmFirstBoot(i) ==
//	    /\ i \in unconfirmed /\ answered[i] = Server \ {i}
//	    /\ unconfirmed' = unconfirmed \ {i} /\ known' = [known EXCEPT ![i] = answered[i]]
//	    /\ answered' = [answered EXCEPT ![i] = {}]
//
// Passive(i) == i \in unconfirmed \cup lost: Timeout(i) is not enabled,
// HandleRequestVoteRequest grants nothing, and HandleAppendEntriesRequest
// consumes the request without effect or reply (the implementation
// replies passively, MsgAppRespPassive, which the leader counts toward no
// quorum; the model leaves the log alone, which no invariant reads).
//
// With -bug wiped-votes nothing is ever unconfirmed: a wipe boots a member
// that votes and campaigns at once.

// WipeVarsOf are the variables of wipe.go; all zero without wipes.
type WipeVarsOf[T Int] struct {
	Left        T         // wipesLeft
	Wiped       ServerSet // wiped: history (the environment's budget)
	Unconfirmed ServerSet // unconfirmed: durable hard state of each member
	Lost        ServerSet // lost: durable, sticky
	// Answered[i]: the yes answers unconfirmed i has collected (volatile
	// in the implementation, where it asks again after a restart; kept
	// here, which only adds behaviours). Known[j]: the incarnations j was
	// confirmed with (durable).
	Answered [MaxServers + 1]ServerSet
	Known    [MaxServers + 1]ServerSet
}

// validateWipes checks the wipe constants.
func (c Config) validateWipes() error {
	switch {
	case c.Wipes < 0 || c.Wipes > 200:
		return fmt.Errorf("wipes=%d: want 0..200", c.Wipes)
	case c.Wipes > 0 && (c.Production || c.Membership || c.PowerLosses > 0):
		return errors.New("-wipes: without the production actions, membership and power losses")
	case c.Wipes == 0 && c.Bugs&wipeBugs != 0:
		return fmt.Errorf("the bugs %v need -wipes", wipeBugs)
	}
	return nil
}

// WipeBugs lists by name the switches of the first-boot confirmation.
func WipeBugs() []string {
	var names []string
	for bit := Bug(1); bit < bugEnd; bit <<= 1 {
		if bit&wipeBugs != 0 {
			names = append(names, bugNames[bit])
		}
	}
	return names
}

// initWipe is Init's part: wipesLeft = Wipes, and every member at its first
// boot unconfirmed (none with -bug wiped-votes).
func (m *Machine[T, L, V]) initWipe(s *StateOf[T, L, V]) {
	if m.Wipes == 0 {
		return
	}
	s.Wipe.Left = T(m.Wipes)
	if !m.Has(BugWipedVotes) {
		for _, i := range m.servers {
			s.Wipe.Unconfirmed = s.Wipe.Unconfirmed.With(i)
		}
	}
}

// passive reports whether i may neither vote nor campaign nor acknowledge:
// its first boot is unconfirmed, or it was found wiped.
func (m *Machine[T, L, V]) passive(s *StateOf[T, L, V], i ServerID) bool {
	return m.Wipes > 0 && (s.Wipe.Unconfirmed.Has(i) || s.Wipe.Lost.Has(i))
}

// pristine is Pristine(j): term 1, no vote, an empty log.
func (m *Machine[T, L, V]) pristine(s *StateOf[T, L, V], j ServerID) bool {
	return s.CurrentTerm[j] == 1 && s.VotedFor[j] == Nil && s.Log[j].Len() == 0
}

// others is Server \ {i}.
func (m *Machine[T, L, V]) others(i ServerID) ServerSet {
	var set ServerSet
	for _, j := range m.servers {
		if j != i {
			set = set.With(j)
		}
	}
	return set
}

// nextWipe emits the successors of wipe.go's actions (none without wipes).
func (m *Machine[T, L, V]) nextWipe(s *StateOf[T, L, V], emit EmitOf[T, L, V]) {
	if m.Wipes == 0 {
		return
	}
	for _, i := range m.servers {
		m.Wipe(s, i, emit)
	}
	for _, i := range m.servers {
		for _, j := range m.servers {
			m.AnswerFirstBoot(s, i, j, emit)
		}
	}
	for _, i := range m.servers {
		m.ConfirmFirstBoot(s, i, emit)
	}
}

// stepWipe is Step for wipe.go's actions.
func (m *Machine[T, L, V]) stepWipe(s *StateOf[T, L, V], l LabelOf[T, L], emit EmitOf[T, L, V]) {
	if m.Wipes == 0 {
		return
	}
	switch l.Action {
	case ActWipe:
		m.Wipe(s, l.I, emit)
	case ActAnswerFirstBoot:
		m.AnswerFirstBoot(s, l.I, l.J, emit)
	case ActConfirmFirstBoot:
		m.ConfirmFirstBoot(s, l.I, emit)
	}
}

// Wipe empties server i's disk and restarts it under its old id.
func (m *Machine[T, L, V]) Wipe(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if s.Wipe.Left == 0 {
		return
	}
	gone := s.Wipe.Wiped.With(i)
	for _, k := range m.servers {
		if s.Verdict[k] == Truncated {
			gone = gone.With(k)
		}
	}
	if gone.Len()*2 > len(m.servers) {
		return
	}
	n := *s
	n.Messages = withoutSelfMessages(s.Messages, i)
	m.resetVolatile(&n, i)
	n.CurrentTerm[i], n.VotedFor[i] = 1, Nil
	n.Log[i], n.StaleLog[i] = *new(L), *new(L)
	n.DurableLen[i], n.LearnedCommit[i], n.StaleDurable[i] = 0, 0, 0
	if m.durable() {
		n.Verdict[i], n.TruncatedAtTerm[i] = Clean, 0
	}
	n.Wipe.Left = s.Wipe.Left - 1
	n.Wipe.Wiped = s.Wipe.Wiped.With(i)
	if !m.Has(BugWipedVotes) {
		drop := ^ServerSet(0).With(i) // everything but i
		n.Wipe.Unconfirmed = s.Wipe.Unconfirmed.With(i)
		n.Wipe.Lost = s.Wipe.Lost & drop
		for _, k := range m.servers {
			n.Wipe.Answered[k] &= drop
			n.Wipe.Known[k] &= drop
		}
		n.Wipe.Answered[i], n.Wipe.Known[i] = 0, 0
	}
	emit(n, LabelOf[T, L]{Action: ActWipe, I: i})
}

// withoutSelfMessages drops the messages i sent itself (raft.tla's vote
// for itself): they are in its memory, not on the network, and go with it.
func withoutSelfMessages[T Int, L Seq[T, L]](bag []BagEntryOf[T, L], i ServerID) []BagEntryOf[T, L] {
	var out []BagEntryOf[T, L]
	for _, e := range bag {
		if e.M.Msource != i || e.M.Mdest != i {
			out = append(out, e)
		}
	}
	return out
}

// AnswerFirstBoot is j's answer to unconfirmed i: yes (i collects it) or no
// (i is lost).
func (m *Machine[T, L, V]) AnswerFirstBoot(s *StateOf[T, L, V], i, j ServerID, emit EmitOf[T, L, V]) {
	if i == j || !s.Wipe.Unconfirmed.Has(i) || s.Wipe.Answered[i].Has(j) {
		return
	}
	n := *s
	if m.pristine(s, j) || s.Wipe.Unconfirmed.Has(j) || s.Wipe.Known[j].Has(i) {
		n.Wipe.Answered[i] = s.Wipe.Answered[i].With(j)
	} else {
		n.Wipe.Lost = s.Wipe.Lost.With(i)
		n.Wipe.Unconfirmed = s.Wipe.Unconfirmed &^ ServerSet(0).With(i)
		n.Wipe.Answered[i] = 0
	}
	emit(n, LabelOf[T, L]{Action: ActAnswerFirstBoot, I: i, J: j})
}

// ConfirmFirstBoot confirms i's first boot once every other member said
// yes (with -bug wipe-confirm-quorum: a quorum of the servers, i not
// counted).
func (m *Machine[T, L, V]) ConfirmFirstBoot(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if !s.Wipe.Unconfirmed.Has(i) {
		return
	}
	got := s.Wipe.Answered[i]
	if got != m.others(i) && !(m.Has(BugWipeConfirmQuorum) && m.Quorum(got)) {
		return
	}
	n := *s
	n.Wipe.Unconfirmed = s.Wipe.Unconfirmed &^ ServerSet(0).With(i)
	n.Wipe.Known[i] = got
	n.Wipe.Answered[i] = 0
	emit(n, LabelOf[T, L]{Action: ActConfirmFirstBoot, I: i})
}

// handleAppendEntriesRequestOrPassive is HandleAppendEntriesRequest, at a
// passive member passiveAppend.
func (m *Machine[T, L, V]) handleAppendEntriesRequestOrPassive(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if m.passive(s, i) {
		m.passiveAppend(s, i, j, msg, emit)
		return
	}
	m.HandleAppendEntriesRequest(s, i, j, msg, emit)
}

// passiveAppend is HandleAppendEntriesRequest at a passive member: the
// request is consumed, nothing else changes.
func (m *Machine[T, L, V]) passiveAppend(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mterm > s.CurrentTerm[i] {
		return // UpdateTerm first, as HandleAppendEntriesRequest
	}
	n := *s
	n.Discard(msg)
	emit(n, LabelOf[T, L]{Action: ActHandleAppendEntriesRequest, I: i, J: j, Msg: msg})
}

func (e *encoder) wipe(m *Model, w *WipeVars) {
	e.u8(w.Left)
	e.set(uint8(w.Wiped))
	e.set(uint8(w.Unconfirmed))
	e.set(uint8(w.Lost))
	for _, i := range m.servers {
		e.set(uint8(w.Answered[i]))
		e.set(uint8(w.Known[i]))
	}
}

func (d *decoder) wipe(m *Model, w *WipeVars) {
	w.Left = d.u8()
	w.Wiped = ServerSet(d.u8())
	w.Unconfirmed = ServerSet(d.u8())
	w.Lost = ServerSet(d.u8())
	for _, i := range m.servers {
		w.Answered[i] = ServerSet(d.u8())
		w.Known[i] = ServerSet(d.u8())
	}
}

// WipeVars is the explorer's.
type WipeVars = WipeVarsOf[uint8]
