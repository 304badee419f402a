package spec

// Next is raft.tla's Next (in profile durable, with Restart replaced by
// Crash and with Flush and Corrupt added). It emits every successor of s,
// one per enabled action instance, in a fixed order.
//
//	Next == /\ \/ \E i \in Server : Restart(i)
//	           \/ \E i \in Server : Timeout(i)
//	           \/ \E i,j \in Server : RequestVote(i, j)
//	           \/ \E i \in Server : BecomeLeader(i)
//	           \/ \E i \in Server, v \in Value : ClientRequest(i, v)
//	           \/ \E i \in Server : ChangeConfig(i)     \* membership only
//	           \/ \E i \in Server : AdvanceCommitIndex(i)
//	           \/ \E i,j \in Server : AppendEntries(i, j)
//	           \/ \E m \in DOMAIN messages : Receive(m)
//	           \/ \E m \in DOMAIN messages : DuplicateMessage(m)
//	           \/ \E m \in DOMAIN messages : DropMessage(m)
//	        /\ allLogs' = allLogs \cup {log[i] : i \in Server}
//
// allLogs' is built from the logs of s, the pre-state, on every step.
//
// In the production profile every step of a server but Crash, Corrupt and
// Persist may open its persistence window (OpenWindow, window.go).
//
// With Config.Production the actions of production.go are added, and an
// AppendEntries request with more than one entry is handled only by
// HandleAppendEntriesBatch.
func (m *Machine[T, L, V]) Next(s *StateOf[T, L, V], emit EmitOf[T, L, V]) {
	out := emit
	if m.history {
		allLogs := m.withLogs(s.AllLogs, s)
		out = func(n StateOf[T, L, V], l LabelOf[T, L]) {
			n.AllLogs = allLogs
			emit(n, l)
		}
	}
	out = m.windowed(s, out)
	for _, i := range m.servers {
		if m.durable() {
			m.Crash(s, i, out)
			m.Corrupt(s, i, out)
			m.Flush(s, i, out)
			if m.PowerLosses > 0 {
				m.PowerLoss(s, i, out)
			}
		} else {
			m.Restart(s, i, out)
		}
	}
	m.nextWipe(s, out)
	for _, i := range m.servers {
		m.Timeout(s, i, out)
	}
	for _, i := range m.servers {
		for _, j := range m.servers {
			m.RequestVote(s, i, j, out)
		}
	}
	for _, i := range m.servers {
		m.BecomeLeader(s, i, out)
	}
	for _, i := range m.servers {
		for _, v := range m.values {
			m.ClientRequest(s, i, v, out)
		}
	}
	for _, i := range m.servers {
		m.ChangeConfig(s, i, out)
	}
	for _, i := range m.servers {
		m.AdvanceCommitIndex(s, i, out)
	}
	for _, i := range m.servers {
		for _, j := range m.servers {
			m.AppendEntries(s, i, j, out)
		}
	}
	if m.Production {
		m.nextProduction(s, out)
	}
	if m.Repair {
		m.nextRepair(s, out)
	}
	for _, e := range s.Messages {
		if m.Production {
			m.receiveProduction(s, e.M, out)
		} else {
			m.Receive(s, e.M, out)
		}
	}
	for _, e := range s.Messages {
		m.DuplicateMessage(s, e.M, out)
	}
	for _, e := range s.Messages {
		m.DropMessage(s, e.M, out)
	}
	if m.BadCommits > 0 {
		for _, e := range s.Messages {
			m.CorruptLeaderCommit(s, e.M, 0, out)
		}
	}
}

// Step runs the one action instance that label names from s and emits the
// successors it yields (more than one only for the choices a label does not
// fix). It is how traces are replayed.
func (m *Machine[T, L, V]) Step(s *StateOf[T, L, V], l LabelOf[T, L], emit EmitOf[T, L, V]) {
	var allLogs []L
	if m.history {
		allLogs = m.withLogs(s.AllLogs, s)
	}
	out := func(n StateOf[T, L, V], got LabelOf[T, L]) {
		switch {
		case l.Action == ActCrash || l.Action == ActCorrupt || l.Action == ActCrashFromSnapshot || l.Action == ActCorruptFromSnapshot ||
			l.Action == ActPowerLoss || l.Action == ActPowerLossFromSnapshot:
			if got.Cut != l.Cut {
				return
			}
		case l.Action == ActFlushTo && l.Cut != 0: // 0: the trace did not say
			if got.Cut != l.Cut {
				return
			}
		case l.Action == ActSendRepairSnapshot && l.Cut != 0: // the snapshot's index
			if got.Cut != l.Cut {
				return
			}
		}
		if l.Branch != BranchNone && got.Branch != l.Branch {
			return
		}
		if m.history {
			n.AllLogs = allLogs
		}
		emit(n, got)
	}
	out = m.windowed(s, out)
	if l.Action.isProduction() {
		if m.Production {
			m.stepProduction(s, l, out)
		}
		return
	}
	i, j := l.I, l.J
	switch l.Action {
	case ActRestart:
		if !m.durable() {
			m.Restart(s, i, out)
		}
	case ActCrash:
		if m.durable() {
			m.Crash(s, i, out)
		}
	case ActCorrupt:
		if m.durable() {
			m.Corrupt(s, i, out)
		}
	case ActFlush:
		if m.durable() {
			m.Flush(s, i, out)
		}
	case ActPowerLoss:
		if m.PowerLosses > 0 {
			m.PowerLoss(s, i, out)
		}
	case ActPowerLossFromSnapshot:
		if m.PowerLosses > 0 && m.Production {
			m.PowerLossFromSnapshot(s, i, out)
		}
	case ActWipe, ActAnswerFirstBoot, ActConfirmFirstBoot:
		m.stepWipe(s, l, out)
	case ActTimeout:
		m.Timeout(s, i, out)
	case ActRequestVote:
		m.RequestVote(s, i, j, out)
	case ActBecomeLeader:
		m.BecomeLeader(s, i, out)
	case ActClientRequest:
		m.ClientRequest(s, i, l.Value, out)
	case ActAdvanceCommitIndex:
		m.AdvanceCommitIndex(s, i, out)
	case ActChangeConfig:
		m.ChangeConfig(s, i, func(n StateOf[T, L, V], got LabelOf[T, L]) {
			// A trace names the server changed (peer): it must be the one
			// the value changes.
			if got.Value == l.Value && got.J == l.J {
				out(n, got)
			}
		})
	case ActAppendEntries:
		m.AppendEntries(s, i, j, out)
	case ActRequestRepair:
		m.RequestRepair(s, i, j, out)
	case ActCorruptLeaderCommit:
		if m.BadCommits > 0 && s.Count(l.Msg) > 0 {
			m.CorruptLeaderCommit(s, l.Msg, l.Cut, out)
		}
	default:
		if !l.Action.ReceivesMessage() || s.Count(l.Msg) == 0 {
			return
		}
		msg := l.Msg
		i, j = msg.Mdest, msg.Msource
		switch l.Action {
		case ActUpdateTerm:
			m.UpdateTerm(s, i, j, msg, out)
		case ActHandleRequestVoteRequest:
			if msg.Mtype == RequestVoteRequest {
				m.HandleRequestVoteRequest(s, i, j, msg, out)
			}
		case ActHandleRequestVoteResponse:
			if msg.Mtype == RequestVoteResponse {
				m.HandleRequestVoteResponse(s, i, j, msg, out)
			}
		case ActHandleAppendEntriesRequest:
			if msg.Mtype == AppendEntriesRequest && !(m.Production && msg.Mentries.Len() > 1) {
				m.handleAppendEntriesRequestOrPassive(s, i, j, msg, out) // wipe.go
			}
		case ActHandleAppendEntriesResponse:
			if msg.Mtype == AppendEntriesResponse {
				m.HandleAppendEntriesResponse(s, i, j, msg, out)
			}
		case ActDropStaleResponse:
			if msg.Mtype == RequestVoteResponse || msg.Mtype == AppendEntriesResponse {
				m.DropStaleResponse(s, i, j, msg, out)
			}
		case ActHandleRepairRequest:
			m.HandleRepairRequest(s, i, j, msg, out)
		case ActHandleRepairResponse:
			m.HandleRepairResponse(s, i, j, msg, out)
		case ActSendRepairSnapshot:
			m.SendRepairSnapshot(s, i, j, msg, out)
		case ActDuplicateMessage:
			m.DuplicateMessage(s, msg, out)
		case ActDropMessage:
			m.DropMessage(s, msg, out)
		}
	}
}

// windowed applies OpenWindow to the successors of s, in the production
// profile.
func (m *Machine[T, L, V]) windowed(s *StateOf[T, L, V], emit EmitOf[T, L, V]) EmitOf[T, L, V] {
	if !m.Production {
		return emit
	}
	return func(n StateOf[T, L, V], l LabelOf[T, L]) {
		switch l.Action {
		case ActCrash, ActCorrupt, ActPersist, ActCrashFromSnapshot, ActCorruptFromSnapshot, ActInstallSnapshot, ActCorruptLeaderCommit, ActPowerLoss, ActPowerLossFromSnapshot:
		default:
			m.openWindow(s, &n, l.I)
		}
		emit(n, l)
	}
}
