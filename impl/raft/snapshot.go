package raft

import (
	"fmt"

	"github.com/durableraft/durableraft/impl/raft/tracker"

	"github.com/durableraft/durableraft/trace"
)

// Snapshots and compaction. The core stays pure: it never reads or writes
// a snapshot. The driver makes snapshots of its state machine and tells the
// core (SnapshotMade), drops log entries below one (Compact), streams a
// snapshot to a follower when the core asks (a MsgSnap in Ready.Messages)
// and says how that went (ReportSnapshot), and hands a follower's core a
// snapshot it received in full (StepSnapshot), carrying out the install
// the core decides on (Ready.Snapshot). docs/snapshots.md.
//
// For the spec (spec/production.go): compaction is no step at all (the
// trace keeps the whole log; the tracer holds every entry's term and value),
// a MsgSnap the leader sends is SendSnapshot (a message with the prefix of
// its log up to the snapshot, which its commit index covers), the install is
// InstallSnapshot, and a restart with a snapshot is CrashFromSnapshot or
// CorruptFromSnapshot (the commit index comes back as the snapshot's).

// SnapshotInfo names a snapshot by the last entry it covers.
type SnapshotInfo struct {
	Index, Term uint64
}

// snapshotState is the node's knowledge of snapshots.
//
// Invariants: snap.Index >= log.first-1 (compaction never passes the
// snapshot); snap.Index <= log.applied; snap.Index = 0 exactly when no
// snapshot is known; installing != nil only between the input that
// installed it and the Ready that hands it out.
type snapshotState struct {
	snap       SnapshotInfo
	installing *SnapshotInfo
	// prefix is the trace's entries of the snapshot a follower is stepping
	// (tracing only): what its trace message carries.
	prefix []trace.Entry
}

// SnapshotMade tells the node that the driver holds a durable snapshot of
// the state machine at s: s.Index at most the applied index, s.Term that
// entry's term. A leader sends the newest one to followers that need
// entries below the compaction point. Older snapshots are ignored.
func (n *Node) SnapshotMade(s SnapshotInfo) error {
	defer n.checkInvariants()
	if s.Index <= n.snaps.snap.Index {
		return nil
	}
	if s.Index > n.log.applied {
		return fmt.Errorf("raft: snapshot at %d beyond the applied index %d", s.Index, n.log.applied)
	}
	t, ok := n.log.term(s.Index)
	if !ok || t != s.Term {
		return fmt.Errorf("raft: snapshot at %d/%d: the log has term %d there (known %v)", s.Term, s.Index, t, ok)
	}
	n.snaps.snap = s
	return nil
}

// Snapshot is the newest snapshot the node knows of.
func (n *Node) Snapshot() SnapshotInfo { return n.snaps.snap }

// Compact tells the node that storage no longer holds the entries up to
// and including through: Storage.FirstIndex() is through+1 from now on.
// through must not exceed the applied, committed and durable indexes nor
// the newest snapshot (what the state machine and a lagging follower
// restart from), and must not be below the last compaction point.
func (n *Node) Compact(through uint64) error {
	defer n.checkInvariants()
	l := &n.log
	switch {
	case through < l.first-1:
		return fmt.Errorf("raft: compact through %d below the compaction point %d", through, l.first-1)
	case through > l.applied || through > l.committed || through > l.durable || through > n.snaps.snap.Index:
		return fmt.Errorf("raft: compact through %d beyond applied %d, committed %d, durable %d or the snapshot %d",
			through, l.applied, l.committed, l.durable, n.snaps.snap.Index)
	}
	l.compact(through)
	n.compactConfs(through)
	return nil
}

// compact drops the terms of the entries up to through.
func (l *raftLog) compact(through uint64) {
	t := l.mustTerm(through)
	var runs []termRun
	if through < l.last {
		runs = append(runs, termRun{index: through + 1, term: l.mustTerm(through + 1)})
		for _, r := range l.runs {
			if r.index > through+1 {
				runs = append(runs, r)
			}
		}
	}
	l.first, l.baseTerm, l.runs = through+1, t, runs
	drop := 0
	for drop < len(l.cache) && l.cacheFrom()+uint64(drop) <= through {
		l.cacheBytes -= uint64(len(l.cache[drop].Data))
		drop++
	}
	if drop > 0 {
		l.cache = append([]Entry(nil), l.cache[drop:]...)
	}
}

// restore makes the log the empty log after a snapshot at (index, term):
// everything up to index is committed, applied and durable.
func (l *raftLog) restore(index, term uint64) {
	l.first, l.baseTerm, l.last, l.runs = index+1, term, index, nil
	l.durable, l.committed, l.applied, l.handed = index, index, index, index
	l.truncateFrom, l.unstable, l.cache, l.cacheBytes = 0, nil, nil, 0
}

// sendSnapshot asks the driver to stream the newest snapshot to pr: spec
// SendSnapshot(i, j, k) with k the snapshot's index, which the leader's
// commit index must cover (after a restart the commit index comes back as
// the snapshot's, and it passes every snapshot once the leader commits an
// entry of its term). Until the driver reports (ReportSnapshot) or the
// follower acknowledges the snapshot's index, pr is paused.
func (n *Node) sendSnapshot(pr *tracker.Progress) {
	s := n.snaps.snap
	switch {
	case s.Index == 0 || s.Index+1 < n.log.first:
		n.alert(AlertStorage, "follower %d needs entries from %d, compacted, and no snapshot covers them (snapshot %d)", pr.ID, pr.Next, s.Index)
		return
	case s.Index > n.log.committed:
		// The commit index passes it once this leader commits an entry of
		// its term; the probe's retry (bcastHeartbeat) asks again.
		if pr.State == tracker.StateProbe {
			pr.Probed, pr.ProbeAge = true, 0
		}
		return
	}
	pr.BecomeSnapshot(s.Index)
	conf := Entry{Index: s.Index, Term: s.Term, Data: EncodeMembership(membershipOf(n.confs.at(s.Index)))}
	m := Message{Type: MsgSnap, To: NodeID(pr.ID), Term: n.hs.Term, PrevLogIndex: s.Index, PrevLogTerm: s.Term, LeaderCommit: n.log.committed,
		Entries: []Entry{conf}}
	m.From = n.id
	if n.tr != nil {
		n.snaps.prefix = n.tr.log[:s.Index]
		n.tr.event("SendSnapshot", m.To, &m, "")
		n.snaps.prefix = nil
	}
	n.send(m)
}

// ReportSnapshot tells a leader how streaming the snapshot at index to a
// follower ended: delivered (the follower's core took it: installed, or it
// already held the snapshot's last entry) or failed (aborted, refused,
// unreadable). Delivered, the leader probes from index+1; failed, it
// probes from the follower's match and sends a snapshot again when it still
// needs one. A report for another snapshot, or from another state, is
// ignored.
func (n *Node) ReportSnapshot(to NodeID, index uint64, delivered bool) {
	defer n.checkInvariants()
	pr := n.progressOf(to)
	if n.role != RoleLeader || pr == nil || NodeID(pr.ID) == n.id || pr.State != tracker.StateSnapshot || pr.PendingSnapshot != index {
		return
	}
	if delivered {
		// What the follower answered before it took the snapshot is stale:
		// a rejection of an earlier heartbeat must not send it back to a
		// snapshot (successSeq marks what is older).
		pr.SuccessSeq = max(pr.SuccessSeq, pr.Seq+1)
		pr.BecomeProbe(index + 1)
		n.sendAppend(pr)
		return
	}
	pr.BecomeProbe(pr.Match + 1)
	pr.Probed = true // retried at the probe's cadence, not at once (the report may repeat)
}

// StepSnapshot hands the node a snapshot a leader streamed to it, in full
// and verified by the driver: m is its MsgSnap (PrevLogIndex and
// PrevLogTerm the snapshot's last entry, LeaderCommit the leader's commit
// index, and in Entries, optionally, one entry at the snapshot's index and
// term whose data is the configuration the snapshot records, as the
// leader's MsgSnap carries it: EncodeMembership; without it the
// configuration is the initial one, Config.Voters), prefix the trace's entries up to it (tracing only; nil
// otherwise). It reports whether the node installs it: then Ready.Snapshot
// asks the driver to restore the state machine from it and reset the WAL
// after it, before the next input. A snapshot the log already covers (its
// last entry is held, or committed), or of an older term, is not installed.
//
// For the spec a snapshot the node does not install is no step at all: the
// leader's offer (its SendSnapshot) stays in flight, as the leader's driver
// may deliver it again (a transfer resumed after this node restarted, or
// resent after a lost answer), and InstallSnapshot does not consume it
// either (spec/snapshot.go).
func (n *Node) StepSnapshot(m Message, prefix []trace.Entry) (bool, error) {
	if m.Type != MsgSnap {
		return false, fmt.Errorf("%w: StepSnapshot of %v", ErrInvalidMessage, m.Type)
	}
	if err := Validate(&m, n.id, nil); err != nil {
		return false, err
	}
	if n.tr != nil && uint64(len(prefix)) != m.PrevLogIndex {
		return false, fmt.Errorf("raft: tracing: snapshot at %d with a trace prefix of %d entries", m.PrevLogIndex, len(prefix))
	}
	defer n.checkInvariants()
	n.snaps.prefix = prefix
	defer func() { n.snaps.prefix = nil }()
	if n.walFailed {
		return false, ErrWALFailed
	}
	if n.repairSnapshotFrom(&m) {
		return n.stepRepairSnapshot(&m, prefix), nil // repair.go: from a peer, not a leader
	}
	if n.unconfirmed() {
		n.traceDrop(&m) // firstboot.go: outside the protocol until confirmed
		return false, nil
	}
	if m.Term > n.hs.Term {
		n.updateTerm(&m, m.From)
	}
	switch {
	case m.Term < n.hs.Term || n.role == RoleCandidate:
		return false, nil
	case n.role == RoleLeader:
		n.alert(AlertProtocol, "snapshot from %d in my own term %d as leader", m.From, m.Term)
		return false, nil
	case n.role == RolePreCandidate:
		n.becomeFollower(m.From)
	}
	n.lead = m.From
	n.electionElapsed, n.leaderSilentTicks = 0, 0
	index, term := m.PrevLogIndex, m.PrevLogTerm
	if index <= n.log.committed || n.log.matchTerm(index, term) {
		return false, nil
	}
	n.installSnapshot(&m, prefix)
	return true, nil
}

// installSnapshot is spec InstallSnapshot: the log becomes the snapshot's
// prefix, all of it committed, applied and durable (the driver made the
// snapshot file durable before it stepped it).
func (n *Node) installSnapshot(m *Message, prefix []trace.Entry) {
	index, term := m.PrevLogIndex, m.PrevLogTerm
	n.dropPendingAcks()
	n.log.restore(index, term)
	n.confs = confHistory{{index: index, cfg: n.snapshotConfig(m)}}
	n.applyConfig()
	n.hs.LearnedCommit = max(n.hs.LearnedCommit, n.learnedFrom(m.LeaderCommit, index))
	n.snaps.snap = SnapshotInfo{Index: index, Term: term}
	n.snaps.installing = &SnapshotInfo{Index: index, Term: term}
	if n.tr != nil {
		n.tr.log = append(n.tr.log[:0:0], prefix...)
		n.tr.keep = 0
		n.tr.event("InstallSnapshot", m.From, m, "")
	}
	n.evaluatePolicy(false)
}

// TracePrefix is the trace's entries (term and value) of the log up to
// index, for a snapshot file, so that a node booting from it or installing
// it traces the whole log; nil when the node does not trace.
func (n *Node) TracePrefix(index uint64) []trace.Entry {
	if n.tr == nil || index > uint64(len(n.tr.log)) {
		return nil
	}
	return append([]trace.Entry(nil), n.tr.log[:index]...)
}

// compactedView handles an AppendEntries whose PrevLogIndex lies below the
// compaction point: every entry up to the point is committed here, so it
// is held. It returns the message as the log can check it (PrevLogIndex at
// the compaction point, the entries after it), or all = true when the
// message holds nothing after the point. A message whose entry at the
// point has another term contradicts the committed log: bad = true.
func (n *Node) compactedView(m *Message) (view Message, all, bad bool) {
	base := n.log.first - 1
	if m.PrevLogIndex >= base {
		return *m, false, false
	}
	skip := base - m.PrevLogIndex
	if skip > uint64(len(m.Entries)) {
		return *m, true, false
	}
	if m.Entries[skip-1].Term != n.log.baseTerm {
		return *m, false, true
	}
	view = *m
	view.PrevLogIndex, view.PrevLogTerm = base, n.log.baseTerm
	view.Entries = m.Entries[skip:]
	return view, false, false
}

// bootSnapshot takes the boot's snapshot: its last entry must be storage's
// (or storage's compaction base), with its term; the commit index starts
// at it.
func (n *Node) bootSnapshot(boot Boot) error {
	s, l := boot.Snapshot, &n.log
	if s == (SnapshotInfo{}) {
		return nil
	}
	if t, ok := l.term(s.Index); !ok || t != s.Term || s.Index+1 < l.first {
		return fmt.Errorf("raft: boot: snapshot %d/%d: storage holds (%d, %d] with term %d there", s.Term, s.Index, l.first-1, l.last, t)
	}
	if boot.Applied < s.Index {
		return fmt.Errorf("raft: boot: applied %d below the snapshot %d", boot.Applied, s.Index)
	}
	n.snaps.snap = s
	l.committed = s.Index // at least first-1, where bootLog put it: s.Index+1 >= first was checked
	return nil
}

func (n *Node) checkSnapshotInvariants() {
	s := n.snaps.snap
	if !(s.Index == 0 || (s.Index+1 >= n.log.first && s.Index <= n.log.applied)) {
		failf("snapshot %d with the log (%d, %d], applied %d", s.Index, n.log.first-1, n.log.last, n.log.applied)
	}
	if !(n.snaps.installing == nil || *n.snaps.installing == s) {
		failf("installing %+v, snapshot %+v", *n.snaps.installing, s)
	}
}

// CompactLimit is the highest index the driver may compact through now:
// the lowest of the applied, committed and durable indexes and the newest
// snapshot.
func (n *Node) CompactLimit() uint64 {
	l := &n.log
	return min(l.applied, l.committed, l.durable, n.snaps.snap.Index)
}
