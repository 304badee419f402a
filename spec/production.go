package spec

import "fmt"

// This file holds the actions of the production core (impl/raft) that
// neither raft.tla nor the durable profile has. They are enabled by
// Config.Production (durable profile only). Except for the persistence
// window (window.go: persisted, held, staleDurable), each is a step over the
// variables raft.tla and the durable profile already have, so the
// invariants of invariants.go judge them unchanged. docs/refinement.md
// maps every step of impl/raft to these actions and to raft.tla's.
//
// The actions generalise raft.tla's where the production core does more in
// one message or remembers more:
//
//   - SendAppendEntries(i, j, prev, n): a leader sends any range of its log,
//     from any prevLogIndex, with any number of entries — batches, pipelining
//     (the next range before the previous one is acknowledged), fast
//     back-off (prevLogIndex chosen from a follower's hint rather than
//     nextIndex - 1) and heartbeats (n = 0). raft.tla's AppendEntries is the
//     case prev = nextIndex[i][j] - 1, n <= 1.
//   - HandleAppendEntriesBatch(i, j, m): a follower's handling of such a
//     message. raft.tla's HandleAppendEntriesRequest looks at m.mentries[1]
//     only, which is right for at most one entry; with more it would reply
//     success for entries it does not hold. The batch handler checks every
//     entry, truncates at the first conflict, appends the missing suffix at
//     once, and keeps commitIndex monotonic (Max with m.mcommitIndex) where
//     raft.tla overwrites it.
//   - HandleAppendEntriesResponseMax(i, j, m): matchIndex only grows
//     (Max with m.mmatchIndex), so a late or duplicated acknowledgment does
//     not lower it; nextIndex never falls below an acknowledged match.
//   - FlushTo(i): a flush that makes only a prefix of the appended entries
//     durable (the WAL synced a batch while the core appended more).
//   - StepDown(i): a leader or candidate becomes a follower in its own term
//     (check-quorum lost, a failed WAL, a candidate going back to pre-vote).
//   - Persist(i) (window.go): the end of i's persistence window, the hard
//     state and a truncation durable, the messages that waited for them
//     released. With the production actions hard state is durable only
//     then, and a crash inside the window may undo it.
//
// Which action generalises which (the production actions are all allowed
// in addition to raft.tla's and the durable profile's):
//
//	raft.tla / durable              production
//	AppendEntries(i, j)             SendAppendEntries(i, j, prev, n)
//	HandleAppendEntriesRequest      HandleAppendEntriesBatch (every AppendEntries request;
//	                                raft.tla's handler only for at most one entry)
//	HandleAppendEntriesResponse     HandleAppendEntriesResponseMax
//	Flush(i)                        FlushTo(i) (a partial flush)
//	—                               StepDown(i)
//	— (hard state durable at once)  Persist(i)

// ProductionActions lists the names of the production actions.
func ProductionActions() []string {
	var out []string
	for a := ActSendAppendEntries; a <= ActCorruptFromSnapshot; a++ {
		out = append(out, a.String())
	}
	return out
}

// isProduction reports whether a is one of the production actions.
func (a Action) isProduction() bool { return a >= ActSendAppendEntries && a <= ActCorruptFromSnapshot }

// productionReceives reports whether the production action a consumes a
// message of the bag.
func (a Action) productionReceives() bool {
	return a == ActHandleAppendEntriesBatch || a == ActHandleAppendEntriesResponseMax || a == ActInstallSnapshot
}

// SendAppendEntries is AppendEntries generalised to any range of the
// leader's log: leader i sends j the entries prev+1..prev+n, for every
// 0 <= prev <= Len(log[i]) and 0 <= n <= Len(log[i]) - prev.
//
//	SendAppendEntries(i, j, prev, n) ==
//	    /\ i /= j
//	    /\ state[i] = Leader
//	    /\ prev \in 0..Len(log[i]) /\ n \in 0..(Len(log[i]) - prev)
//	    /\ LET prevLogTerm == IF prev > 0 THEN log[i][prev].term ELSE 0
//	           lastEntry == prev + n
//	       IN Send([mtype          |-> AppendEntriesRequest,
//	                mterm          |-> currentTerm[i],
//	                mprevLogIndex  |-> prev,
//	                mprevLogTerm   |-> prevLogTerm,
//	                mentries       |-> SubSeq(log[i], prev + 1, lastEntry),
//	                mlog           |-> log[i],
//	                mcommitIndex   |-> Min({commitIndex[i], lastEntry}),
//	                mleaderCommit  |-> commitIndex[i],
//	                msource        |-> i,
//	                mdest          |-> j])
//	    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars>>
//
// nextIndex is not read: which range to send is the leader's business, and
// any range of its own log is a message raft.tla's leader could send for
// some value of nextIndex, except that it may hold more than one entry.
func (m *Machine[T, L, V]) SendAppendEntries(s *StateOf[T, L, V], i, j ServerID, emit EmitOf[T, L, V]) {
	if i == j || s.State[i] != Leader || (m.Membership && !m.isMember(s, i, j)) {
		return
	}
	log := s.Log[i]
	for prev := 0; prev <= log.Len(); prev++ {
		for last := prev; last <= log.Len(); last++ {
			msg := m.appendEntriesRange(s, i, j, prev, last)
			n := *s
			n.Send(msg)
			emit(n, LabelOf[T, L]{Action: ActSendAppendEntries, I: i, J: j, Msg: msg})
		}
	}
}

// appendEntriesRange is the message SendAppendEntries(i, j, prev, last-prev)
// sends.
func (m *Machine[T, L, V]) appendEntriesRange(s *StateOf[T, L, V], i, j ServerID, prev, last int) MessageOf[T, L] {
	log := s.Log[i]
	var prevLogTerm T
	if prev > 0 {
		prevLogTerm = log.Term(prev)
	}
	msg := MessageOf[T, L]{
		Mtype:         AppendEntriesRequest,
		Mterm:         s.CurrentTerm[i],
		MprevLogIndex: T(prev),
		MprevLogTerm:  prevLogTerm,
		Mentries:      log.SubSeq(prev+1, last),
		McommitIndex:  min(s.CommitIndex[i], T(last)),
		MleaderCommit: s.CommitIndex[i],
		Msource:       i,
		Mdest:         j,
	}
	if m.history {
		msg.Mlog = log
	}
	return msg
}

// HandleAppendEntriesBatch is HandleAppendEntriesRequest for a message with
// any number of entries. Reject and return-to-follower are raft.tla's. When
// the request is accepted (m.mterm = currentTerm[i], state[i] = Follower,
// logOk), let k be the first position of m.mentries whose index is in
// log[i] with another term:
//
//	\/ \* conflict: truncate at the first conflicting entry
//	   /\ k exists
//	   /\ log'        = [log EXCEPT ![i] = SubSeq(log[i], 1, m.mprevLogIndex + k - 1)]
//	   /\ durableLen' = [durableLen EXCEPT ![i] = Min({durableLen[i], m.mprevLogIndex + k - 1})]
//	\/ \* append: no conflict, the log ends inside the message's range
//	   /\ k does not exist
//	   /\ Len(log[i]) < m.mprevLogIndex + Len(m.mentries)
//	   /\ log' = [log EXCEPT ![i] = log[i] \o SubSeq(m.mentries, Len(log[i]) - m.mprevLogIndex + 1, Len(m.mentries))]
//	\/ \* already done: every entry is in log[i], and durable
//	   /\ k does not exist
//	   /\ Len(log[i]) >= m.mprevLogIndex + Len(m.mentries)
//	   /\ durableLen[i] >= m.mprevLogIndex + Len(m.mentries)
//	   /\ commitIndex'   = [commitIndex EXCEPT ![i] = Max({commitIndex[i], m.mcommitIndex})]
//	   /\ learnedCommit' = [learnedCommit EXCEPT ![i] = Max({learnedCommit[i], LearnedFrom(m)})]
//	   /\ (the fence of a TRUNCATED member releases when FenceReleases(i, m))
//	   /\ Reply(success, mmatchIndex |-> m.mprevLogIndex + Len(m.mentries))
//	\/ \* durable prefix: a heartbeat beyond the durable log is answered at once
//	   /\ m.mentries = << >> /\ m.mprevLogIndex <= Len(log[i])
//	   /\ durableLen[i] < m.mprevLogIndex
//	   /\ Reply(success, mmatchIndex |-> durableLen[i])
//
// The durable-prefix reply is safe because logOk and Log Matching make
// log[i]'s first mprevLogIndex entries the leader's: its durable prefix is
// a prefix of the leader's log, which the leader may count. It keeps
// heartbeats, check-quorum and read rounds from waiting on a slow
// fdatasync; the heartbeat teaches nothing else (no commit index), and the
// entries' own requests are acknowledged when durable.
//
// As in raft.tla, conflict and append leave the message in the bag; the
// success reply comes when it is handled again, once the entries are
// durable. The bug switches of the durable profile apply as in
// HandleAppendEntriesRequest.
func (m *Machine[T, L, V]) HandleAppendEntriesBatch(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mterm > s.CurrentTerm[i] || msg.Mtype != AppendEntriesRequest {
		return
	}
	log := s.Log[i]
	prev := int(msg.MprevLogIndex)
	logOk := prev == 0 || (prev <= log.Len() && msg.MprevLogTerm == log.Term(prev))
	label := LabelOf[T, L]{Action: ActHandleAppendEntriesBatch, I: i, J: j, Msg: msg}
	if !m.rejectOrReturnToFollower(s, i, j, msg, logOk, label, emit) {
		return
	}
	entries := msg.Mentries
	present, conflict := 0, 0
	for k := 1; k <= entries.Len() && prev+k <= log.Len(); k++ {
		if log.Term(prev+k) != entries.Term(k) {
			conflict = k
			break
		}
		present = k
	}
	switch {
	case conflict > 0:
		keep := prev + conflict - 1
		n := *s
		n.Log[i] = log.Prefix(keep)
		n.DurableLen[i] = min(s.DurableLen[i], T(keep))
		m.keepStaleLog(s, &n, i)
		label.Branch = BranchConflict
		emit(n, label)
	case present < entries.Len():
		n := *s
		n.Log[i] = log.Concat(entries.SubSeq(present+1, entries.Len()))
		label.Branch = BranchAppend
		emit(n, label)
	default:
		matchIndex := prev + entries.Len()
		if !m.Has(BugFollowerAcksAppended) && int(s.DurableLen[i]) < matchIndex {
			if entries.Len() == 0 {
				// A heartbeat beyond the durable log: acknowledge what is
				// durable now, a prefix of the leader's log.
				n := *s
				m.reply(&n, MessageOf[T, L]{Mtype: AppendEntriesResponse, Mterm: s.CurrentTerm[i], Msuccess: true,
					MmatchIndex: s.DurableLen[i], Msource: i, Mdest: j}, msg)
				label.Branch = BranchDurablePrefix
				emit(n, label)
			}
			return // else it waits in the bag for a flush
		}
		n := *s
		n.CommitIndex[i] = max(s.CommitIndex[i], msg.McommitIndex)
		n.LearnedCommit[i] = m.learnedFrom(s, i, msg)
		if s.Verdict[i] != Clean && m.FenceReleases(s, i, msg) {
			repaired(&n, i)
		}
		m.reply(&n, MessageOf[T, L]{Mtype: AppendEntriesResponse, Mterm: s.CurrentTerm[i], Msuccess: true,
			MmatchIndex: T(matchIndex), Msource: i, Mdest: j}, msg)
		label.Branch = BranchAlreadyDone
		emit(n, label)
	}
}

// HandleAppendEntriesResponseMax is HandleAppendEntriesResponse with a
// matchIndex that only grows:
//
//	HandleAppendEntriesResponseMax(i, j, m) ==
//	    /\ m.mterm = currentTerm[i]
//	    /\ \/ /\ m.msuccess
//	          /\ matchIndex' = [matchIndex EXCEPT ![i][j] = Max({@, m.mmatchIndex})]
//	          /\ nextIndex'  = [nextIndex EXCEPT ![i][j] = Max({@, m.mmatchIndex + 1})]
//	       \/ /\ \lnot m.msuccess
//	          /\ nextIndex' = [nextIndex EXCEPT ![i][j] = Max({@ - 1, 1})]
//	          /\ UNCHANGED matchIndex
//	    /\ Discard(m)
//	    /\ UNCHANGED <<serverVars, candidateVars, logVars, elections>>
//
// Within a term the leader's log only grows and a follower acknowledges
// only what it durably holds, so the largest acknowledged match stays a
// matching durable prefix — unless the follower is corrupted, which is the
// corruption budget's case (a TRUNCATED member counts as a holder in
// CommittedIsDurable until FenceReleases, which needs a newer leader).
func (m *Machine[T, L, V]) HandleAppendEntriesResponseMax(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if msg.Mterm != s.CurrentTerm[i] || msg.Mtype != AppendEntriesResponse {
		return
	}
	n := *s
	if msg.Msuccess {
		n.MatchIndex[i][j] = max(s.MatchIndex[i][j], msg.MmatchIndex)
		n.NextIndex[i][j] = max(s.NextIndex[i][j], msg.MmatchIndex+1)
	} else {
		n.NextIndex[i][j] = max(s.NextIndex[i][j]-1, 1)
	}
	n.Discard(msg)
	emit(n, LabelOf[T, L]{Action: ActHandleAppendEntriesResponseMax, I: i, J: j, Msg: msg})
}

// FlushTo is a partial group commit: an fdatasync that covers a prefix of
// what is appended, because more was appended while it ran.
//
//	FlushTo(i) ==
//	    /\ \E k \in (durableLen[i] + 1)..(Len(log[i]) - 1) :
//	          durableLen' = [durableLen EXCEPT ![i] = k]
//	    /\ UNCHANGED <<everything else>>
//
// k = Len(log[i]) is Flush(i). Like Flush it needs ~WindowOpen(i).
func (m *Machine[T, L, V]) FlushTo(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if m.WindowOpen(s, i) {
		return
	}
	for k := int(s.DurableLen[i]) + 1; k < s.Log[i].Len(); k++ {
		n := *s
		n.DurableLen[i] = T(k)
		if m.PowerLosses > 0 {
			n.BatchStart[i] = s.DurableLen[i] // the flush this one is (power.go)
		}
		n.StaleLog[i], n.StaleDurable[i] = *new(L), 0 // the flusher syncs a pending truncation first
		emit(n, LabelOf[T, L]{Action: ActFlushTo, I: i, Cut: T(k)})
	}
}

// StepDown is a leader or candidate returning to follower in its own term:
// check-quorum finds no recent quorum, the WAL failed, or a candidate goes
// back to pre-vote. Nothing else changes; in particular votedFor stays, so
// i does not vote again in this term.
//
//	StepDown(i) ==
//	    /\ state[i] \in {Leader, Candidate}
//	    /\ state' = [state EXCEPT ![i] = Follower]
//	    /\ UNCHANGED <<messages, currentTerm, votedFor, candidateVars, leaderVars, logVars>>
func (m *Machine[T, L, V]) StepDown(s *StateOf[T, L, V], i ServerID, emit EmitOf[T, L, V]) {
	if s.State[i] != Leader && s.State[i] != Candidate {
		return
	}
	n := *s
	n.State[i] = Follower
	emit(n, LabelOf[T, L]{Action: ActStepDown, I: i})
}

// nextProduction emits the successors of the production actions that take
// no message, for Next.
func (m *Machine[T, L, V]) nextProduction(s *StateOf[T, L, V], emit EmitOf[T, L, V]) {
	for _, i := range m.servers {
		m.FlushTo(s, i, emit)
		m.StepDown(s, i, emit)
		m.Persist(s, i, emit)
		m.CrashFromSnapshot(s, i, emit)
		m.CorruptFromSnapshot(s, i, emit)
		if m.PowerLosses > 0 {
			m.PowerLossFromSnapshot(s, i, emit) // power_production.go
		}
	}
	for _, i := range m.servers {
		for _, j := range m.servers {
			m.SendAppendEntries(s, i, j, emit)
			m.SendSnapshot(s, i, j, emit)
		}
	}
}

// receiveProduction is Receive(m) of the production profile: raft.tla's
// handlers, except that an AppendEntries request with more than one entry
// goes only to HandleAppendEntriesBatch, plus the production handlers.
func (m *Machine[T, L, V]) receiveProduction(s *StateOf[T, L, V], msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	i, j := msg.Mdest, msg.Msource
	if (msg.Mtype == AppendEntriesRequest && msg.Mentries.Len() > 1) || msg.Mtype == InstallSnapshotRequest {
		m.UpdateTerm(s, i, j, msg, emit)
	} else {
		m.Receive(s, msg, emit)
	}
	switch msg.Mtype {
	case InstallSnapshotRequest:
		m.InstallSnapshot(s, i, j, msg, emit)
	case AppendEntriesRequest:
		m.HandleAppendEntriesBatch(s, i, j, msg, emit)
	case AppendEntriesResponse:
		m.HandleAppendEntriesResponseMax(s, i, j, msg, emit)
	}
}

// stepProduction is Step for the production actions.
func (m *Machine[T, L, V]) stepProduction(s *StateOf[T, L, V], l LabelOf[T, L], emit EmitOf[T, L, V]) {
	switch l.Action {
	case ActSendAppendEntries:
		i, j := l.I, l.J
		if i == j || s.State[i] != Leader || l.Msg.Mtype != AppendEntriesRequest {
			return
		}
		prev, last := int(l.Msg.MprevLogIndex), int(l.Msg.MprevLogIndex)+l.Msg.Mentries.Len()
		if last > s.Log[i].Len() {
			return
		}
		msg := m.appendEntriesRange(s, i, j, prev, last)
		want := l.Msg
		want.Mlog = msg.Mlog
		if compareMessage(&msg, &want) != 0 {
			return
		}
		n := *s
		n.Send(msg)
		emit(n, LabelOf[T, L]{Action: ActSendAppendEntries, I: i, J: j, Msg: msg})
	case ActHandleAppendEntriesBatch, ActHandleAppendEntriesResponseMax:
		if s.Count(l.Msg) == 0 {
			return
		}
		i, j := l.Msg.Mdest, l.Msg.Msource
		if l.Action == ActHandleAppendEntriesBatch {
			m.HandleAppendEntriesBatch(s, i, j, l.Msg, emit)
		} else {
			m.HandleAppendEntriesResponseMax(s, i, j, l.Msg, emit)
		}
	case ActFlushTo:
		m.FlushTo(s, l.I, emit)
	case ActStepDown:
		m.StepDown(s, l.I, emit)
	case ActPersist:
		m.Persist(s, l.I, emit)
	case ActSendSnapshot:
		i, j, k := l.I, l.J, l.Msg.Mentries.Len()
		if i == j || s.State[i] != Leader || l.Msg.Mtype != InstallSnapshotRequest || k < 1 || T(k) > s.CommitIndex[i] {
			return
		}
		msg := m.snapshotMessage(s, i, j, k)
		want := l.Msg
		want.Mlog = msg.Mlog
		if compareMessage(&msg, &want) != 0 {
			return
		}
		n := *s
		n.Send(msg)
		emit(n, LabelOf[T, L]{Action: ActSendSnapshot, I: i, J: j, Msg: msg})
	case ActInstallSnapshot:
		if s.Count(l.Msg) > 0 {
			m.InstallSnapshot(s, l.Msg.Mdest, l.Msg.Msource, l.Msg, emit)
		}
	case ActCrashFromSnapshot:
		m.CrashFromSnapshot(s, l.I, emit)
	case ActCorruptFromSnapshot:
		m.CorruptFromSnapshot(s, l.I, emit)
	default:
		panic(fmt.Sprintf("stepProduction: %v is not a production action", l.Action))
	}
}
