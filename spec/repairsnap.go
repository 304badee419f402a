package spec

// The repair answered with a snapshot (production profile with -repair;
// docs/repair.md, "Repair by snapshot").
//
// A TRUNCATED member behind its peer's compaction point cannot be sent the
// entries it lacks: the peer answers with its snapshot instead, a MsgSnap
// from a voter that does not lead, which the member installs without
// following the sender, then asks again for the entries after it. In the
// spec the answer is an InstallSnapshotRequest as a leader's SendSnapshot
// builds it (the peer's log up to k, its commit index), k any index the
// peer's commit index covers, posted as the answer to the request
// (Reply); the member's install is InstallSnapshot itself (snapshot.go:
// the log becomes the prefix, durable and committed), whose guard does not
// ask who sent it. It counts nothing: the member asks again (RequestRepair,
// enabled while the peer is not counted) and the entries answer that
// follows is counted as any other (HandleRepairResponse).
//
//	SendRepairSnapshot(i, j, m, k) ==
//	    /\ m.mtype = RepairRequest /\ m.mterm <= currentTerm[i]
//	    /\ verdict[i] = Clean
//	    /\ k \in 1..commitIndex[i]
//	    /\ Reply([mtype         |-> InstallSnapshotRequest,
//	              mterm         |-> currentTerm[i],
//	              mentries      |-> SubSeq(log[i], 1, k),
//	              mleaderCommit |-> commitIndex[i],
//	              msource       |-> i,
//	              mdest         |-> j], m)
//	    /\ UNCHANGED <<serverVars, candidateVars, leaderVars, logVars, repairFrom>>
//
// The answer is posted as the entries answer is (held in i's persistence
// window, which the request's term opened): its term must be durable
// before it leaves, as the driver's contract says of every message (the
// simulator's PersistBeforeSend caught a core that sent it at once).
//
// Why it is safe: the prefix is committed (k <= commitIndex[i]), so every
// future leader holds it, and SnapshotCommitted judges the message as it
// judges a leader's. The install may drop what the member held beyond k
// (entries conflicting with the committed prefix, never committed); what
// it still lacks it takes, and is counted on, only through the entries
// answers, so RepairCovers rests on the same argument as before.
//
// A trace logs the request it consumes and k as the event's cut; the
// install is the requester's InstallSnapshot event (its message the
// snapshot, mprefix and all). Without -production the answer is the
// atomic HandleRepairResponse's log, as before, and this action is never
// enabled: every count of the durable profile with -repair is unchanged.
func (m *Machine[T, L, V]) SendRepairSnapshot(s *StateOf[T, L, V], i, j ServerID, msg MessageOf[T, L], emit EmitOf[T, L, V]) {
	if !m.Repair || !m.Production || msg.Mtype != RepairRequest || msg.Mterm > s.CurrentTerm[i] || s.Verdict[i] != Clean {
		return
	}
	for k := 1; k <= int(s.CommitIndex[i]); k++ {
		n := *s
		m.reply(&n, m.snapshotMessage(s, i, j, k), msg) // posted: held in an open window
		emit(n, LabelOf[T, L]{Action: ActSendRepairSnapshot, I: i, J: j, Msg: msg, Cut: T(k)})
	}
}
