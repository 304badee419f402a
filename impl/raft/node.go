package raft

import (
	"errors"
	"fmt"

	"github.com/durableraft/durableraft/impl/raft/tracker"
)

// Node is one member's protocol state machine. It does no I/O, starts no
// goroutine and reads no clock: inputs arrive through Step, Tick, Propose,
// ReadIndex, TransferLeadership, Campaign and Advance; outputs leave
// through Ready. A Node is not safe for concurrent use: one goroutine (the
// driver) owns it.
//
// Invariants (checkInvariants, asserted after every input):
//   - the log's (log.go), and hs.TruncatedAtTerm <= hs.Term.
//   - role = Leader implies lead = id and the tracker keeps one progress per
//     member (voter or learner); otherwise it keeps none.
//   - the configuration in force is the latest of confs (membership.go).
//   - a leader's commit index only counts itself at its durable index.
//   - walFailed implies role = Follower and no pending acknowledgment.
//   - hardStateLost implies role = Follower and no tracer (the node is
//     outside the spec), for the node's whole life.
type Node struct {
	cfg Config
	id  NodeID
	// trk: the configuration in force, the leader's progress of every
	// member, the votes of an election; confs: the configurations of the
	// log (membership.go).
	trk         *tracker.Tracker
	ballot      map[NodeID]uint8 // the answers of the election in progress (ambiguous.go)
	confs       confHistory
	confChanged bool // the configuration in force changed since the last Ready

	hs       HardState // the current hard state
	hsHanded HardState // the hard state of the last Ready
	// The persistence window, as the trace tells it (persist.go): the
	// hard state the driver last reported durable, and whether a handed
	// suffix truncation waits for that report.
	hsPersisted      HardState
	truncationHanded bool
	role             Role
	lead             NodeID
	log              raftLog

	firstBoot          bool
	electionElapsed    int
	heartbeatElapsed   int
	randomizedElection int
	leaderSilentTicks  int // ticks since a leader of the current term was heard

	// Leader.
	bcastPending     bool // proposals to send in the next Ready; only with unstable entries of a leader (checkInvariants)
	uncommittedBytes uint64
	readRound        uint64
	pendingReads     []pendingRead // waiting for a quorum to echo their round; a leader's only
	waitingReads     []pendingRead // waiting for the first commit of the term; a leader's only
	transferee       NodeID
	transferElapsed  int

	// Follower: AppendEntries accepted but not yet durable, to acknowledge
	// once they are (spec: the message waits in the bag for Flush).
	pendingAcks []Message

	walFailed  bool
	failReason string

	snaps snapshotState

	repair repairState // a TRUNCATED member's repair from its peers (repair.go)

	// hardStateLost: Boot.HardStateLost, or a first boot found wiped
	// (firstboot.go); sticky for the node's life.
	hardStateLost bool
	fb            firstBootState
	// stateFenced: FenceStateDiverged; sticky for the node's life (a
	// restart rebuilds the state machine from the log and checks again).
	stateFenced       bool
	stateFencedReason string
	votesRefused      uint64 // vote requests a lost hard state refused, for the alert

	policyRow    *policyRow
	alertElapsed int
	// lagTicks counts the ticks an ELIGIBLE running follower has matched
	// row 2 (CLEAN, behind its learned commit, a leader heard): replication
	// lag until it reaches Config.ElectionTick, a fence after
	// (evaluatePolicy). 0 whenever the row is not 2 or the node is fenced.
	lagTicks    int
	ticks       uint64                   // Tick calls since boot: the alert limiter's clock
	alertLimits [alertKindEnd]alertLimit // per kind, for event alerts

	msgs, msgsAfter []Message
	readStates      []ReadState
	alerts          []Alert

	tr      *tracer
	scratch []uint64
}

// NewNode boots a node from what the caller recovered. On a first boot
// (empty storage, zero hard state) the node starts at term 1, as raft.tla's
// Init. Any other boot is a restart: the spec's Crash, or Corrupt when the
// WAL's verdict is TRUNCATED, which fences the member (truncatedAtTerm :=
// the current term) until FenceReleases. A boot with Boot.HardStateLost is
// none of these: the node is passive for its life and traces nothing.
func NewNode(cfg Config, boot Boot) (*Node, error) {
	cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, id: cfg.ID, hardStateLost: boot.HardStateLost}
	if err := n.bootLog(boot); err != nil {
		return nil, err
	}
	if err := n.bootConfig(boot); err != nil {
		return nil, err
	}
	hs := boot.HardState
	if n.hardStateLost && n.log.last >= n.log.first {
		// The recovered copy (or zero) may be older than the log: the term
		// is at least the last entry's. Nothing else of it is trusted.
		hs.Term = max(hs.Term, n.log.lastTerm())
	}
	if err := n.validateHardState(hs); err != nil {
		return nil, err
	}
	n.firstBoot = hs == (HardState{}) && n.log.last == 0 && n.log.first == 1 && !n.hardStateLost
	n.hsHanded = boot.HardState
	if hs.Term == 0 {
		hs.Term = 1
	}
	// What the spec takes as durable at boot: the recovered hard state (a
	// first boot's term 1 is Init's). A TRUNCATED mark the storage did not
	// write already waits for a Persist (BugMarkAfterCut).
	n.hsPersisted = hs
	hs = n.bootMark(hs, boot.Verdict)
	n.hs = hs
	n.resetElection()
	if err := n.bootFirstBoot(boot); err != nil {
		return nil, err
	}
	if boot.ForceNewCluster {
		if _, err := n.forceNewCluster(); err != nil {
			return nil, err
		}
	}
	if cfg.Trace != nil && !n.hardStateLost && !boot.ForceNewCluster {
		tr, err := newTracer(n, boot.TracePrefix)
		if err != nil {
			return nil, err
		}
		n.tr = tr
		if !n.firstBoot {
			n.tr.boot(boot.Verdict)
		}
	}
	n.evaluatePolicy(false)
	n.checkInvariants()
	return n, nil
}

// bootLog reads the recovered log's extent and terms from storage.
func (n *Node) bootLog(boot Boot) error {
	st := n.cfg.Storage
	first, last := st.FirstIndex(), st.LastIndex()
	if first < 1 || last+1 < first || last > IndexMax {
		return fmt.Errorf("raft: boot: storage holds (%d, %d]", first-1, last)
	}
	baseTerm, err := st.Term(first - 1)
	if err != nil {
		return fmt.Errorf("raft: boot: term of the compaction base %d: %w", first-1, err)
	}
	l := &n.log
	*l = raftLog{storage: st, first: first, baseTerm: baseTerm, last: first - 1, cacheMax: n.cfg.CacheBytesMax}
	prevTerm := baseTerm
	for i := first; i <= last; {
		t, err := st.Term(i)
		if err != nil {
			return fmt.Errorf("raft: boot: term of %d: %w", i, err)
		}
		if t < prevTerm || t == 0 || t > TermMax {
			return fmt.Errorf("raft: boot: entry %d has term %d after term %d", i, t, prevTerm)
		}
		// The run of term t ends at the largest j with Term(j) = t; terms
		// never decrease, so binary search finds it.
		lo, hi := i, last
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			tm, err := st.Term(mid)
			if err != nil {
				return fmt.Errorf("raft: boot: term of %d: %w", mid, err)
			}
			if tm == t {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		l.runs = append(l.runs, termRun{index: i, term: t})
		l.last, prevTerm, i = lo, t, lo+1
	}
	l.durable, l.handed = last, last
	l.committed = first - 1
	l.applied = max(boot.Applied, first-1)
	return n.bootSnapshot(boot)
}

func (n *Node) validateHardState(hs HardState) error {
	switch {
	case hs.Term > TermMax || hs.LearnedCommit > IndexMax:
		return fmt.Errorf("raft: boot: hard state %+v out of range", hs)
	case hs.TruncatedAtTerm > max(hs.Term, 1):
		return fmt.Errorf("raft: boot: truncatedAtTerm %d beyond term %d", hs.TruncatedAtTerm, hs.Term)
	case hs.Ambiguous && hs.TruncatedAtTerm == 0:
		return fmt.Errorf("raft: boot: hard state marked ambiguous without its term (truncatedAtTerm 0)")
	case n.log.last >= n.log.first && n.log.lastTerm() > max(hs.Term, 1):
		return fmt.Errorf("raft: boot: last entry of term %d beyond the hard state's term %d", n.log.lastTerm(), hs.Term)
	}
	return nil
}

// resetElection restarts the election timer with a new random timeout in
// [ElectionTick, 2*ElectionTick).
func (n *Node) resetElection() {
	n.electionElapsed = 0
	n.randomizedElection = n.cfg.ElectionTick + int(n.cfg.Rand.Uint64N(uint64(n.cfg.ElectionTick)))
}

// Tick advances the node's logical clock by one tick.
func (n *Node) Tick() {
	defer n.checkInvariants()
	n.ticks++
	n.flushSuppressedAlerts()
	if n.walFailed {
		n.alertElapsed++
		if n.alertElapsed >= n.cfg.AlertTicks {
			n.alertElapsed = 0
			n.alertCondition(AlertWALFailed, "%s; acknowledging nothing, granting no vote", n.failReason)
		}
		return
	}
	if n.role == RoleLeader {
		n.tickLeader()
	} else if n.unconfirmed() {
		n.leaderSilentTicks++
		n.tickFirstBoot()
	} else {
		n.leaderSilentTicks++
		n.electionElapsed++
		if n.electionElapsed >= n.randomizedElection {
			n.resetElection()
			n.hup(false)
		}
		n.tickRepair()
	}
	n.evaluatePolicy(true)
}

// FenceStateDiverged fences the member for good (until restarted): the
// cross-replica state check found its state machine's state different
// from a majority's at an index the logs agree on. It neither campaigns
// nor votes from now on (vote requests get no answer, pre-votes are
// refused) and a leader steps down; it still replicates and applies (its
// log is verified by the hash chain; its state is what is suspect). Never
// voting is always safe; it only costs the cluster a voter.
func (n *Node) FenceStateDiverged(reason string) {
	defer n.checkInvariants()
	if n.stateFenced {
		return
	}
	n.stateFenced, n.stateFencedReason = true, reason
	if n.role == RoleLeader || n.role == RoleCandidate {
		n.stepDown()
	}
	if n.role == RolePreCandidate {
		n.role = RoleFollower
	}
	n.alertCondition(AlertFenced, "STATE DIVERGED: %s; no vote, no campaign until restarted", reason)
}

// Campaign starts an election now (pre-vote first when configured). A
// fenced member refuses: ErrFenced.
func (n *Node) Campaign() error {
	switch {
	case n.walFailed:
		return ErrWALFailed
	case n.role == RoleLeader:
		return nil
	case n.hardStateLost:
		n.evaluatePolicy(false)
		return ErrHardStateLost
	case n.unconfirmed():
		return ErrUnconfirmed
	case n.stateFenced:
		return ErrFenced
	case !n.promotable():
		n.evaluatePolicy(false)
		return ErrFenced
	case !n.isVoter(n.id):
		return ErrNotVoter
	}
	n.hup(false)
	n.checkInvariants()
	return nil
}

// Propose appends entries to the leader's log, one per data. It returns the
// index of the first; their term is the current term. An entry is
// acknowledged once a Ready hands it out as committed.
func (n *Node) Propose(data ...[]byte) (uint64, error) {
	switch {
	case n.walFailed:
		return 0, ErrWALFailed
	case n.role != RoleLeader:
		return 0, ErrNotLeader
	case n.transferee != None:
		return 0, ErrTransferring
	}
	var size uint64
	for _, d := range data {
		if uint64(len(d)) > n.cfg.EntryBytesMax {
			return 0, ErrProposalTooLarge
		}
		if IsConfigEntry(d) {
			return 0, ErrReservedData
		}
		size += uint64(len(d))
	}
	if n.uncommittedBytes+size > n.cfg.UncommittedBytesMax && n.uncommittedBytes > 0 {
		return 0, ErrProposalDropped
	}
	if n.log.last+uint64(len(data)) > IndexMax {
		return 0, ErrProposalDropped
	}
	first := n.log.last + 1
	for _, d := range data {
		n.appendLeader(d)
	}
	n.uncommittedBytes += size
	n.bcastPending = true
	n.maybeCommit()
	n.maybeStepDownRemoved()
	n.checkInvariants()
	return first, nil
}

// appendLeader appends one entry of the current term: spec ClientRequest.
func (n *Node) appendLeader(data []byte) {
	e := Entry{Index: n.log.last + 1, Term: n.hs.Term, Data: data}
	n.log.append(e)
	if n.tr != nil {
		n.tr.appendLog(e)
		n.tr.clientRequest(data)
	}
}

// AdvanceInfo reports the WAL's progress: the durable index (with the term
// of that entry, so a report from before a suffix truncation is recognised
// and ignored) or a failure.
type AdvanceInfo struct {
	DurableIndex, DurableTerm uint64
	Failed                    bool
	Reason                    string
}

// Advance tells the node what the WAL made durable, or that it failed. A
// failed WAL makes the node acknowledge nothing and grant no vote, step down
// if it leads, and say so every Config.AlertTicks until it restarts.
func (n *Node) Advance(a AdvanceInfo) {
	defer n.checkInvariants()
	if a.Failed {
		n.fail(a.Reason)
		return
	}
	if n.walFailed || a.DurableIndex <= n.log.durable {
		return
	}
	if a.DurableIndex > n.log.handed {
		n.alert(AlertStorage, "the WAL reports durable index %d beyond the %d entries handed to it", a.DurableIndex, n.log.handed)
		return
	}
	if !n.log.matchTerm(a.DurableIndex, a.DurableTerm) {
		return // a report from before a suffix truncation
	}
	n.log.durable = a.DurableIndex
	if n.tr != nil {
		n.tr.flush(n.log.durable == n.log.last)
	}
	if n.role == RoleLeader {
		n.maybeCommit()
		n.maybeStepDownRemoved()
		n.maybeAutoPromote()
	} else {
		n.processPendingAcks()
		n.processRepairAwaits()
	}
	n.evaluatePolicy(false)
}

// fail puts the node in the failed state.
func (n *Node) fail(reason string) {
	if n.walFailed {
		return
	}
	n.walFailed, n.failReason = true, "WAL failed: "+reason
	if n.role == RoleLeader || n.role == RoleCandidate {
		n.stepDown()
	}
	n.role, n.lead = RoleFollower, None
	n.dropPendingAcks() // (read rounds are a leader's: stepDown dropped them)
	n.msgsAfter = nil
	n.alertElapsed = 0
	n.alertCondition(AlertWALFailed, "%s; acknowledging nothing, granting no vote", n.failReason)
}

// stepDown is spec StepDown: a leader or candidate becomes a follower in its
// own term.
func (n *Node) stepDown() {
	n.becomeFollower(None)
	if n.tr != nil {
		n.tr.event("StepDown", None, nil, "")
	}
}

// becomeFollower makes the node a follower of lead in the current term.
func (n *Node) becomeFollower(lead NodeID) {
	n.role, n.lead = RoleFollower, lead
	n.trk.StopLeading()
	n.bcastPending, n.uncommittedBytes = false, 0
	n.pendingReads, n.waitingReads = nil, nil
	n.transferee = None
	n.resetVotes()
	n.heartbeatElapsed = 0
}

// send queues a message. Responses and vote requests wait for the hard
// state of their Ready (MessagesAfterPersist); AppendEntries, pre-votes and
// TimeoutNow may leave at once (the leader writes its log in parallel with
// replication). A member whose hard state was lost sends nothing a quorum
// counts: its AppendEntries responses leave as MsgAppRespPassive, and it
// sends no other spec message (the handlers never ask it to).
func (n *Node) send(m Message) {
	m.From = n.id
	if n.hardStateLost {
		switch m.Type {
		case MsgFirstBoot, MsgFirstBootResp:
		case MsgAppResp:
			m.Type = MsgAppRespPassive
		case MsgPreVoteResp:
			if m.Granted {
				failf("a member with a lost hard state grants a pre-vote")
			}
		default:
			failf("a member with a lost hard state sends %v", m.Type)
		}
	}
	switch m.Type {
	case MsgVote, MsgVoteResp, MsgAppResp, MsgAppRespPassive, MsgRepair, MsgRepairResp:
		n.msgsAfter = append(n.msgsAfter, m)
	default:
		n.msgs = append(n.msgs, m)
	}
}

// Ready is a batch of work for the driver, in this order:
//
//  1. Send Messages (they depend on nothing unpersisted).
//  2. Persist: if HardStateChanged, make HardState durable (it must be
//     before step 3); if TruncateFrom > 0, remove the log entries from
//     TruncateFrom on, durably before step 3 (a crash must not bring them
//     back, see docs/refinement.md); append Entries to the WAL (durability
//     follows asynchronously, reported through Advance). Once both are
//     durable, call Persisted, before the next input.
//  3. Send MessagesAfterPersist. If persisting failed, drop them and report
//     the failure through Advance.
//  4. Apply Committed to the state machine, answer ReadStates once it has
//     applied their index, and log Alerts for the operator.
//
// The entries handed out in a Ready must be in the WAL, readable through
// Storage, before the driver calls into the node again.
//
// LearnedCommit is not part of the hard state to persist: a change of it
// alone leaves HardStateChanged false. The driver keeps it lazily
// (impl/replica writes it with the next hard state), and may lose the latest value at a
// crash (the spec's production rule: a restart brings back any lower
// value, docs/durable-raft.md).
type Ready struct {
	HardState        HardState
	HardStateChanged bool
	TruncateFrom     uint64
	Entries          []Entry
	// LearnedCommit is the node's learned commit index (HardState's), in
	// every Ready, for the driver to keep with the log.
	LearnedCommit uint64

	Messages             []Message
	MessagesAfterPersist []Message

	Committed  []Entry
	ReadStates []ReadState
	Alerts     []Alert

	// Snapshot, when set, is a snapshot the node installed (StepSnapshot):
	// before anything else of this Ready, the driver restores the state
	// machine from it and resets the WAL after it (the log is empty up to
	// its index, which is committed, applied and durable). Committed then
	// holds no entry at or below its index.
	Snapshot *SnapshotInfo

	// MembershipChanged: the configuration in force (Node.Membership)
	// changed since the last Ready: an entry appended, cut by a
	// truncation, or installed by a snapshot. The driver updates its peer
	// set (connect to a new member, stop sending to a removed one).
	MembershipChanged bool

	// FirstBoot, when set, is the first boot's record (firstboot.go),
	// confirmed or found wiped: the driver makes it durable with the hard
	// state of step 2, before anything after it.
	FirstBoot *FirstBoot

	// Soft state, for the driver.
	Role Role
	Lead NodeID
}

// hardStateDue reports whether the hard state changed since the last Ready
// handed it out. A change of LearnedCommit alone does not count (Ready).
func (n *Node) hardStateDue() bool { return !sameHardState(n.hs, n.hsHanded) }

// HasReady reports whether Ready would return anything.
func (n *Node) HasReady() bool {
	return n.hardStateDue() || len(n.log.unstable) > 0 || n.log.truncateFrom != 0 ||
		n.log.committed > n.log.applied || len(n.msgs) > 0 || len(n.msgsAfter) > 0 ||
		len(n.readStates) > 0 || len(n.alerts) > 0 || n.snaps.installing != nil || n.confChanged ||
		n.fb.changed
}

// Ready returns the pending work and hands it to the caller.
func (n *Node) Ready() Ready {
	if n.bcastPending && n.role == RoleLeader {
		n.bcastAppend()
	}
	n.bcastPending = false
	rd := Ready{Role: n.role, Lead: n.lead, Snapshot: n.snaps.installing, MembershipChanged: n.confChanged}
	n.confChanged = false
	n.snaps.installing = nil
	if n.fb.changed {
		rd.FirstBoot, n.fb.changed = n.fb.rec.clone(), false
	}
	if n.hardStateDue() {
		rd.HardState, rd.HardStateChanged = n.hs, true
		n.hsHanded = n.hs
	}
	rd.TruncateFrom = n.log.truncateFrom
	if rd.TruncateFrom > 0 && !n.has(BugTruncationNotSynced) {
		n.truncationHanded = true
	}
	rd.Entries = n.log.unstable
	rd.LearnedCommit = n.hs.LearnedCommit
	n.log.handOff()
	if n.log.committed > n.log.applied {
		ents, err := n.log.entries(n.log.applied+1, n.log.committed+1, n.cfg.ApplyBytesMax)
		if err != nil {
			n.alert(AlertStorage, "reading committed entries (%d, %d]: %v", n.log.applied, n.log.committed, err)
		} else if len(ents) > 0 {
			rd.Committed = ents
			n.log.applied = ents[len(ents)-1].Index
		}
	}
	rd.Messages, rd.MessagesAfterPersist = n.msgs, n.msgsAfter
	rd.ReadStates, rd.Alerts = n.readStates, n.alerts
	n.msgs, n.msgsAfter, n.readStates, n.alerts = nil, nil, nil, nil
	n.checkInvariants()
	return rd
}

// Status is a snapshot of the node's state for operators and tests.
type Status struct {
	ID              NodeID
	Role            Role
	Lead            NodeID
	HardState       HardState
	Verdict         string // CLEAN or TRUNCATED (sticky until FenceReleases)
	Commit, Applied uint64
	Durable, Last   uint64
	Fence           Outcome
	FenceRow        string
	FenceWhy        string // the boot policy row's reason: why the member may not lead (or vote)
	WALFailed       bool
	// HardStateLost: booted with Boot.HardStateLost; the member neither
	// votes nor campaigns and its acknowledgments are passive (Fence is
	// OutcomeHardStateLost, FenceWhy says why) until an operator replaces it.
	HardStateLost bool
	// FirstBoot: the first boot's record (firstboot.go; nil when first
	// boots are not confirmed). UNCONFIRMED: no vote, no campaign yet;
	// WIPED: HardStateLost too.
	FirstBoot *FirstBoot
	// StateFenced says why the member was fenced by the cross-replica
	// state check (FenceStateDiverged); empty when it was not.
	StateFenced string
	// LagTicks: how long (in ticks) this ELIGIBLE member has been behind
	// the commit index it learned without being reported fenced yet: its
	// fdatasync is behind its leader's commit. It may not campaign
	// meanwhile; at Config.ElectionTick the lag becomes the fence of row 2.
	LagTicks int
	// Voters and Learners: the configuration in force (the latest in the
	// log, committed or not).
	Voters, Learners []NodeID
	Progress         map[NodeID]ProgressStatus
}

// ProgressStatus is the leader's view of one follower.
type ProgressStatus struct {
	Match, Next uint64
	State       string
	Inflight    int
	Learner     bool
}

// Status returns the node's status.
func (n *Node) Status() Status {
	st := Status{ID: n.id, Role: n.role, Lead: n.lead, HardState: n.hs, Verdict: n.verdictString(),
		Commit: n.log.committed, Applied: n.log.applied, Durable: n.log.durable, Last: n.log.last,
		Fence: n.policyRow.outcome, FenceRow: n.policyRow.row, FenceWhy: n.policyRow.why, WALFailed: n.walFailed,
		HardStateLost: n.hardStateLost, StateFenced: n.stateFencedReason, LagTicks: n.lagTicks, FirstBoot: n.FirstBootStatus()}
	st.Voters, st.Learners = fromIDs(n.trk.Config.Voters), fromIDs(n.trk.Config.Learners)
	if n.trk.Leading() {
		st.Progress = map[NodeID]ProgressStatus{}
		for _, id := range n.trk.Order {
			pr := n.trk.Progress[id]
			if NodeID(id) != n.id {
				st.Progress[NodeID(id)] = ProgressStatus{Match: pr.Match, Next: pr.Next, State: pr.State.String(), Inflight: len(pr.Inflights), Learner: pr.Learner}
			}
		}
	}
	return st
}

func (n *Node) checkInvariants() {
	n.log.checkInvariants()
	n.checkSnapshotInvariants()
	if !(n.lagTicks >= 0 && n.lagTicks <= n.cfg.ElectionTick) {
		failf("lag of %d ticks, the grace is %d", n.lagTicks, n.cfg.ElectionTick)
	}
	if !(n.hs.TruncatedAtTerm <= n.hs.Term && n.hs.Term >= 1 && (!n.hs.Ambiguous || n.hs.TruncatedAtTerm != 0)) {
		failf("hard state %+v", n.hs)
	}
	n.checkConfInvariants()
	// A pending broadcast is of entries the leader appended since the last
	// Ready, so HasReady need not ask for it: the unstable entries do.
	if !(!n.bcastPending || n.role != RoleLeader || len(n.log.unstable) > 0) {
		failf("broadcast pending with no unstable entry")
	}
	if !(n.role == RoleLeader || (len(n.pendingReads) == 0 && len(n.waitingReads) == 0)) {
		failf("%d read rounds pending as %v", len(n.pendingReads)+len(n.waitingReads), n.role)
	}
	if !(n.transferee == None || (n.role == RoleLeader && n.isVoter(n.transferee))) {
		failf("transfer to %d as %v", n.transferee, n.role)
	}
	if !((n.role == RoleLeader) == n.trk.Leading()) {
		failf("progress kept %v as %v", n.trk.Leading(), n.role)
	}
	if !(n.role != RoleLeader || n.lead == n.id) {
		failf("leader with lead %d", n.lead)
	}
	if !(!n.walFailed || (n.role == RoleFollower && len(n.pendingAcks) == 0)) {
		failf("failed WAL as %v", n.role)
	}
	if !(!n.hardStateLost || (n.role == RoleFollower && n.tr == nil)) {
		failf("lost hard state as %v (traced %v)", n.role, n.tr != nil)
	}
	// A configuration appended after the commit index (in force at once)
	// may not hold it: the invariant is the commit's own configuration's.
	if !(n.role != RoleLeader || n.has(BugSelfCountsAppended) || n.commitQuorumIndex() >= n.log.committed ||
		n.log.mustTerm(n.log.committed) != n.hs.Term || n.confs.last().index > n.log.committed) {
		failf("leader commit %d above its durable quorum", n.log.committed)
	}
}

// failf panics with context: an invariant of the node's own state does not
// hold. Invariants are checked as "if !cond { failf(...) }" so that the
// arguments are not evaluated (nor boxed) when the invariant holds. Only
// programming errors panic: input from peers, storage and the caller is
// validated and answered with an error or an alert.
func failf(format string, args ...any) {
	panic(errors.New("raft: invariant violated: " + fmt.Sprintf(format, args...)))
}
