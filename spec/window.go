package spec

// The persistence window of the production profile (docs/durable-raft.md,
// "The persistence window").
//
// raft.tla's actions are atomic: a step's hard state is durable the moment
// the step happens. The production core hands its hard state (currentTerm,
// votedFor, truncatedAtTerm) and a suffix truncation to the WAL in a Ready,
// and they are durable a little later; meanwhile the driver holds back every
// message that depends on them (and every new input). With
// Config.Production the spec models that window:
//
//   - persisted[i] is the durable copy of the hard state; a step that changes
//     the hard state, or truncates the log, opens i's window.
//   - The window's base, staleLog[i] with staleDurable[i], is the log and its
//     durable length when the window opened: what the disk holds until the
//     window's writes are durable (the WAL writes them in order: the hard
//     state first, then the truncation, then the entries appended after it).
//   - RequestVote requests and responses and AppendEntries responses that i
//     sends while its window is open (except to itself, which the core
//     handles in memory) wait in held[i], not on the network.
//   - Persist(i) closes the window: the hard state is durable, the truncation
//     too, and the held messages go to the network.
//   - Flush(i) and FlushTo(i) are not enabled while the window is open (the
//     driver reports no progress to a node it holds).
//   - A Crash inside the window may return the old hard state with the base
//     log (nothing of the window reached the disk), the new hard state with
//     the base log (the hard state did, the truncation did not), or the new
//     hard state with the current log (both did); each with any surviving
//     prefix of that log down to its durable length (docs/durable-raft.md's
//     table).
//   - learnedCommit is not hard state: a restart brings back any value up to
//     the one it had (impl/replica writes it only with the next hard state,
//     on a term or vote change: a lower one after a crash, or none).
//
// The node may go on taking steps while its window is open: the window is a
// buffer of writes that reach the disk together at Persist, which covers the
// driver's hold (one input per window) and more. A trace marks the end of a
// window with a Persist event (the driver's release); it needs no event at an
// input's end.

// hardStateOf is i's hard state as the steps so far left it.
func hardStateOf[T Int, L Seq[T, L], V Voters[L, V]](s *StateOf[T, L, V], i ServerID) PersistedOf[T] {
	return PersistedOf[T]{CurrentTerm: s.CurrentTerm[i], VotedFor: s.VotedFor[i], TruncatedAtTerm: s.TruncatedAtTerm[i]}
}

// hardStateDirty reports, in the production profile, whether i's hard state
// differs from its durable copy.
func (m *Machine[T, L, V]) hardStateDirty(s *StateOf[T, L, V], i ServerID) bool {
	return m.Production && hardStateOf(s, i) != s.Persisted[i]
}

// WindowOpen is, in the production profile,
//
//	WindowOpen(i) == \/ persisted[i] /= HardState(i)
//	                 \/ staleLog[i] /= << >> /\ ~Bug(truncation-not-synced)
//
// With -bug truncation-not-synced a truncation does not hold the node: it is
// durable with the next flush, as in the durable profile.
func (m *Machine[T, L, V]) WindowOpen(s *StateOf[T, L, V], i ServerID) bool {
	return m.hardStateDirty(s, i) || (m.Production && !m.Has(BugTruncationNotSynced) && s.StaleLog[i].Len() > 0)
}

// basePresent reports whether i's window (or, with -bug
// truncation-not-synced, a pending truncation) has a base log: an empty
// staleLog[i] is the base when the hard state is dirty.
func (m *Machine[T, L, V]) basePresent(s *StateOf[T, L, V], i ServerID) bool {
	return m.hardStateDirty(s, i) || s.StaleLog[i].Len() > 0
}

// isPrefixOf reports whether p is a prefix of l.
func isPrefixOf[T Int, L Seq[T, L]](p, l L) bool {
	return p.Len() <= l.Len() && l.Prefix(p.Len()).Equal(p)
}

// openWindow is applied to every step of i from s to n (except Crash,
// Corrupt and Persist, which set the window themselves): a step that changes
// the hard state or truncates the log of a node whose window is closed opens
// it, with the log before the step as its base.
//
//	/\ ~WindowOpen(i) /\ (HardState(i)' /= persisted[i] \/ ~IsPrefix(log[i], log'[i]))
//	/\ staleLog'     = [staleLog EXCEPT ![i] = log[i]]
//	/\ staleDurable' = [staleDurable EXCEPT ![i] = durableLen[i]]
//
// With -bug truncation-not-synced a truncation of a node without a pending
// one records the same (its old log, which the next flush forgets).
func (m *Machine[T, L, V]) openWindow(s, n *StateOf[T, L, V], i ServerID) {
	if !m.Production || i == Nil || m.basePresent(s, i) {
		return
	}
	if m.hardStateDirty(n, i) || !isPrefixOf(s.Log[i], n.Log[i]) {
		n.StaleLog[i] = s.Log[i]
		n.StaleDurable[i] = s.DurableLen[i]
	}
}

// post puts a message on the network, or, if it depends on the sender's
// open window, in held[msource].
//
//	Post(m) == IF /\ WindowOpen(m.msource)' /\ m.mdest /= m.msource
//	              /\ m.mtype /= AppendEntriesRequest
//	           THEN held' = [held EXCEPT ![m.msource] = WithMessage(m, held[m.msource])]
//	           ELSE Send(m)
//
// (The window as the step leaves it: the step's own hard-state change
// counts.)
func (m *Machine[T, L, V]) post(n *StateOf[T, L, V], msg MessageOf[T, L]) {
	i := msg.Msource
	if m.Production && msg.Mdest != i && msg.Mtype != AppendEntriesRequest && m.WindowOpen(n, i) {
		n.Held[i] = WithMessage(msg, n.Held[i])
		return
	}
	n.Send(msg)
}

// reply is raft.tla's Reply(response, request) with the response posted.
func (m *Machine[T, L, V]) reply(n *StateOf[T, L, V], response, request MessageOf[T, L]) {
	n.Discard(request)
	m.post(n, response)
}

// Persist ends i's window: its hard state and truncation are durable, the
// messages it held leave.
//
//	Persist(i) ==
//	    /\ WindowOpen(i)
//	    /\ persisted' = [persisted EXCEPT ![i] = HardState(i)]
//	    /\ messages'  = messages (+) held[i]
//	    /\ held'      = [held EXCEPT ![i] = EmptyBag]
//	    /\ staleLog'  = [staleLog EXCEPT ![i] =
//	                       IF Bug(truncation-not-synced) /\ ~IsPrefix(staleLog[i], log[i])
//	                       THEN staleLog[i] ELSE << >>]
//	    /\ UNCHANGED <<everything else>>
//
// With -bug truncation-not-synced a truncation stays pending (staleLog kept)
// until a flush.
func (m *Machine[T, L, V]) Persist(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if !m.WindowOpen(s, i) {
		return
	}
	n := *s
	n.Persisted[i] = hardStateOf(s, i)
	for _, e := range s.Held[i] {
		for k := T(0); k < e.N; k++ {
			n.Send(e.M)
		}
	}
	n.Held[i] = nil
	if !m.Has(BugTruncationNotSynced) || isPrefixOf(s.StaleLog[i], s.Log[i]) {
		n.StaleLog[i], n.StaleDurable[i] = *new(L), 0
	}
	emit(n, LabelOf[T, L]{Action: ActPersist, I: i})
}

// diskImage is one thing a restart of i may find on its disk: a hard state
// and a log of which the first durable entries are durable (more may
// survive: every prefix from durable to the whole log).
type diskImage[T Int, L Seq[T, L]] struct {
	hs      PersistedOf[T]
	log     L
	durable int
}

// diskImages lists what a restart of i may find, in the production profile
// (docs/durable-raft.md, "The persistence window"):
//
//	DiskImages(i) ==
//	    LET base == [log |-> staleLog[i], durable |-> staleDurable[i]]
//	        cur  == [log |-> log[i], durable |-> durableLen[i]]
//	    IN IF ~BasePresent(i) THEN {[hs |-> HardState(i)] @@ cur}
//	       ELSE {[hs |-> persisted[i]] @@ base, [hs |-> HardState(i)] @@ base,
//	             [hs |-> HardState(i)] @@ cur}
//
// Without a dirty hard state the first two are one. Outside the production
// profile: the hard state and the current log, as the durable profile's
// Crash has it (and with -bug truncation-not-synced the stale log, whole).
func (m *Machine[T, L, V]) diskImages(s *StateOf[T, L, V], i ServerID) []diskImage[T, L] {
	hs := hardStateOf(s, i)
	cur := diskImage[T, L]{hs: hs, log: s.Log[i], durable: int(s.DurableLen[i])}
	if !m.Production {
		out := []diskImage[T, L]{cur}
		if stale := s.StaleLog[i]; stale.Len() > 0 {
			out = append(out, diskImage[T, L]{hs: hs, log: stale, durable: stale.Len()})
		}
		return out
	}
	if !m.basePresent(s, i) {
		return []diskImage[T, L]{cur}
	}
	base := diskImage[T, L]{hs: hs, log: s.StaleLog[i], durable: int(s.StaleDurable[i])}
	var out []diskImage[T, L]
	if m.hardStateDirty(s, i) {
		old := base
		old.hs = s.Persisted[i]
		out = append(out, old)
	}
	// The base with the new hard state adds nothing when the current log
	// extends it from at most its durable length.
	if !isPrefixOf(base.log, cur.log) || cur.durable > base.durable {
		out = append(out, base)
	}
	return append(out, cur)
}

// restarted sets what every restart of i leaves of its window: the hard
// state it found, durable, and nothing held or pending.
func (m *Machine[T, L, V]) restarted(n *StateOf[T, L, V], i ServerID, hs PersistedOf[T]) {
	n.CurrentTerm[i], n.VotedFor[i], n.TruncatedAtTerm[i] = hs.CurrentTerm, hs.VotedFor, hs.TruncatedAtTerm
	ambiguous := n.Verdict[i] == Ambiguous // power.go: as sticky as TRUNCATED
	n.Verdict[i] = Clean
	if hs.TruncatedAtTerm != 0 {
		n.Verdict[i] = Truncated
		if ambiguous {
			n.Verdict[i] = Ambiguous
		}
	}
	n.StaleLog[i] = *new(L)
	n.StaleDurable[i] = 0
	if m.Production {
		n.Persisted[i] = hs
		n.Held[i] = nil
	}
}
