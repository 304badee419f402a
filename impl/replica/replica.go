package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
)

// StateMachine is what the replica applies committed entries to. Apply is
// called once per committed entry, in log order, on the replica's
// goroutine; its result is handed to the entry's proposer. It must be
// deterministic: every replica applies the same entries and must reach the
// same state.
type StateMachine interface {
	Apply(e raft.Entry) []byte
}

// Transport carries messages to peers. Send is called once per Ready with
// every message that may leave now (a transport batches them per peer); it
// must not block, and it may drop (the protocol retries).
type Transport interface {
	Send(msgs []Message)
}

// Config configures a replica.
type Config struct {
	// Raft is the protocol configuration. ID and Voters are required;
	// Storage must be nil (the replica's is the WAL); Trace is optional.
	Raft raft.Config
	// WAL and Recovery are what wal.Open returned. The replica owns the WAL
	// from now on (Close closes it).
	WAL      *wal.WAL
	Recovery *wal.Recovery
	// Applied is the index the state machine has already applied (0 for an
	// empty state machine rebuilt from the log). With Snapshots it must be
	// 0: the replica restores the state machine from its snapshot.
	Applied      uint64
	StateMachine StateMachine
	// Snapshots turns snapshots and compaction on (nil: off, the log grows
	// for ever). StateMachine must then implement Snapshotter.
	Snapshots *SnapshotOptions
	Transport Transport
	// Logger receives every transition once, every alert, every refusal
	// (rate-limited). Default slog.Default().
	Logger *slog.Logger
	// TestingBugs re-introduces failures the runtime's rules prevent.
	// Tests only.
	TestingBugs Bug
	// Now and ObserveStage, when both set, time each write's stages
	// (stages.go) for metrics: ObserveStage is called on the replica's
	// goroutine and must not block. Unset (the simulator), nothing is
	// timed and no clock is read.
	Now          func() time.Time
	ObserveStage func(Stage, time.Duration)
	// OnMembership, when set, is called on the replica's goroutine with the
	// configuration in force whenever it changes (an entry appended or cut,
	// a snapshot installed) and once at boot: the server updates its
	// transport's peers. It must not block.
	OnMembership func(raft.Membership)
	// FirstBoot is the data directory's first-boot record (raft's
	// firstboot.go; nil: first boots are not confirmed), and OnFirstBoot
	// makes a changed one durable: it is called on the replica's
	// goroutine, before anything else of the Ready that carries it, and
	// must return once the record is on disk. An error fails the replica
	// as a WAL failure does.
	FirstBoot   *raft.FirstBoot
	OnFirstBoot func(raft.FirstBoot) error
	// ForceNewCluster is raft.Boot.ForceNewCluster (raftd
	// --force-new-cluster).
	ForceNewCluster bool
}

// Replica runs one member: the protocol core over the WAL, with a state
// machine and a transport. It is one function, Handle, that both ways of
// running call: Run (production: goroutines, the real clock, the OS disk)
// and a simulator (stepped: no goroutine of its own, a virtual clock, an
// in-memory disk, every WAL step driven by the caller). It is not safe for
// concurrent use: one goroutine owns it.
//
// The Ready contract of docs/refinement.md ("What the driver must do"),
// kept by processReady:
//  1. hard state is durable before MessagesAfterPersist leave and before
//     the next input;
//  2. a suffix truncation is durable before the next input;
//  3. the entries of a Ready are in the WAL before the next input (and
//     before the Ready's messages leave, so that they travel as the WAL's
//     records);
//  4. Advance reports the WAL's durable index with the term of that entry,
//     from a snapshot (wal.Progress) that may be older than the replica's
//     last submission: the core ignores a report from before a truncation.
//
// "Before the next input" means the replica holds inputs back (queue)
// until a WAL progress report covers the submission (holdTicket); no
// goroutine ever blocks on the disk.
//
// Invariants:
//   - holdTicket != 0 exactly while a submission the core counts on is not
//     yet covered by progress.Synced; while it is, no input reaches the
//     core, and stash holds the MessagesAfterPersist of the held Readies.
//   - proposals is sorted by index; every pending index is above applied.
//   - readRound != 0 exactly while a confirmation round is in flight, and
//     then readsInFlight are the reads it serves.
type Replica struct {
	cfg  Config
	id   raft.NodeID
	node *raft.Node
	w    *wal.WAL
	sm   StateMachine
	tr   Transport
	log  *slog.Logger
	bugs Bug

	holdTicket uint64
	stash      []Message
	queue      []Event
	// progress is the newest WAL progress delivered; advanced is the one
	// last handed to the core.
	progress, advanced wal.Progress
	// failErr is the WAL failure; failReported once the core knows.
	failErr      error
	failReported bool
	// stepLost: the WAL failed while a step of the core was not yet durable
	// (a hold pending, or its submission refused). Nothing that depended on
	// the step left, but the core took it: the spec's atomic actions cannot
	// express a step undone (docs/refinement.md, "What the driver must do").
	stepLost bool
	// ingress holds the verified records of the message being handled, by
	// index, for the append of its Ready.
	ingress map[uint64]wal.Record

	applied   uint64
	proposals []pendingProposal
	// durableTimed: proposals[:durableTimed] have their leader-fdatasync
	// stage timed (stages.go); 0 when stages are not timed.
	durableTimed int

	readsWaiting  []Read
	readSeq       uint64
	readRound     uint64
	readsInFlight []Read
	readsReady    []readBatch

	// hsWritten is the hard state last handed to the WAL.
	hsWritten raft.HardState

	role  raft.Role
	term  uint64
	lead  raft.NodeID
	fence raft.Outcome // the fence last logged (transitions.go)
	stats Stats
	alert alertLimiter

	// snaps is the snapshot machinery, nil without Config.Snapshots.
	snaps *snapRuntime
}

type pendingProposal struct {
	index, term uint64 // term 0 until the entry is handed to the WAL
	done        func(Result)
	// proposedAt, appendedAt, durableAt: when it was proposed, taken by
	// the WAL, covered by the WAL's durable index (stages.go; zero when
	// stages are not timed).
	proposedAt, appendedAt, durableAt time.Time
}

type readBatch struct {
	index uint64
	reads []Read
}

// New boots a replica from what wal.Open recovered and processes what the
// core has to do at once (its first Ready).
func New(cfg Config) (*Replica, error) {
	if cfg.WAL == nil || cfg.Recovery == nil || cfg.StateMachine == nil || cfg.Transport == nil {
		return nil, errors.New("replica: config needs WAL, Recovery, StateMachine and Transport")
	}
	if cfg.Raft.Storage != nil {
		return nil, errors.New("replica: config: Raft.Storage must be nil (the replica's storage is the WAL)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	w, rec := cfg.WAL, cfg.Recovery
	rc := cfg.Raft
	rc.Storage = walStorage{w}
	if rc.OnMark == nil {
		rc.OnMark = hitCoreMark
	}
	hs := hardStateFromWAL(rec.HardState)
	// A lost hard state (WAL rows H2, H6, H7, and H8 on every later boot
	// until an operator clears the mark): the member may have voted in a
	// term it no longer knows, so it runs passive (docs/refinement.md,
	// "What the driver must do", item 5).
	lost := rec.HardStateVerdict == wal.Truncated || w.HardStateLost()
	boot := raft.Boot{HardState: hs, Verdict: verdictFromWAL(rec.Verdict), Applied: cfg.Applied, HardStateLost: lost, FirstBoot: cfg.FirstBoot,
		ForceNewCluster: cfg.ForceNewCluster}
	if cfg.FirstBoot != nil && cfg.OnFirstBoot == nil {
		return nil, errors.New("replica: config: FirstBoot needs OnFirstBoot")
	}
	r := &Replica{
		cfg: cfg, id: rc.ID, w: w, sm: cfg.StateMachine, tr: cfg.Transport,
		log: cfg.Logger.With("node", uint64(rc.ID)), bugs: cfg.TestingBugs,
		applied: cfg.Applied, ingress: map[uint64]wal.Record{},
	}
	if err := r.bootWithSnapshots(&boot); err != nil {
		return nil, err
	}
	if rc.Trace != nil && boot.Snapshot.Index > 0 && boot.TracePrefix == nil && w.FirstIndex() > 1 {
		// The trace keeps the whole log, and the snapshot this boot
		// restarts from was made (or restored) without tracing: its
		// prefix's terms and values are unknown. Tracing is off until a
		// boot from a snapshot made while tracing.
		r.log.Warn("replica: tracing off for this boot: the snapshot it restarts from carries no trace prefix (made without tracing)",
			"snapshot_index", boot.Snapshot.Index)
		rc.Trace = nil
	}
	node, err := raft.NewNode(rc, boot)
	if err != nil {
		return nil, fmt.Errorf("replica: boot: %w", err)
	}
	r.node = node
	r.alert.init()
	r.progress = w.Progress()
	r.advanced = r.progress
	st := node.Status()
	r.role, r.lead, r.term = st.Role, st.Lead, st.HardState.Term
	r.hsWritten = hs
	r.log.Info("replica: booted", "verdict", rec.Verdict.String(), "case", rec.Case,
		"hard_state_verdict", rec.HardStateVerdict.String(), "term", st.HardState.Term, "vote", uint64(st.HardState.Vote),
		"first_index", rec.IndexFirst, "last_index", rec.IndexLast, "learned_commit", st.HardState.LearnedCommit,
		"truncated_at_term", st.HardState.TruncatedAtTerm, "fence", st.Fence.String(), "fence_row", st.FenceRow)
	r.fence = raft.OutcomeEligible
	r.logFence(st) // a fenced boot: FENCE SET, once
	r.noteMembership()
	// The boot's own Ready first: a TRUNCATED verdict's mark (and a first
	// boot's term) must be durable before anything else happens.
	r.processReadies()
	r.run()
	return r, nil
}

// Handle is the replica's one entry point: it takes an input, runs the
// core on it (or queues it while the replica holds inputs back) and
// carries out every Ready that follows.
func (r *Replica) Handle(ev Event) {
	r.stats.Events.Add(1)
	if ev.Kind == EventWAL {
		r.noteProgress(ev.Progress)
	} else {
		r.queue = append(r.queue, ev)
	}
	r.run()
}

// run feeds the core: a WAL failure first, then a release of the hold, an
// Advance when the durable index moved, then queued inputs, one at a
// time, each followed by its Readies. It stops when the queue is empty or a
// submission holds inputs back.
func (r *Replica) run() {
	for {
		if r.failErr != nil && !r.failReported {
			r.reportFailure()
			continue
		}
		if r.holdTicket != 0 {
			if r.progress.Synced < r.holdTicket {
				return
			}
			r.release()
		}
		if r.advanceDue() {
			r.advance()
			r.processReadies()
			continue
		}
		if len(r.queue) == 0 {
			return
		}
		if err := r.w.Err(); err != nil && r.failErr == nil {
			// The WAL failed and its report has not arrived yet: the core
			// must know before it takes a step whose effects could not be
			// made durable.
			r.failErr = err
			continue
		}
		ev := r.takeQueued()
		r.input(ev)
		r.processReadies()
		clear(r.ingress)
	}
}

// takeQueued pops the next queued input. Proposals and reads queued behind
// a hold are merged into the first of their kind: one batch for the core
// (one WAL cycle for every write waiting, one confirmation round for every
// read), as Runner.drain does for its inbox. Client inputs are independent
// of each other and of messages, so the merge reorders nothing that
// matters.
func (r *Replica) takeQueued() Event {
	ev := r.queue[0]
	r.queue[0] = Event{}
	r.queue = r.queue[1:]
	if ev.Kind != EventPropose && ev.Kind != EventRead {
		return ev
	}
	kept := r.queue[:0]
	for _, q := range r.queue {
		switch {
		case q.Kind == EventPropose && ev.Kind == EventPropose:
			ev.Proposals = append(ev.Proposals, q.Proposals...)
		case q.Kind == EventRead && ev.Kind == EventRead:
			ev.Reads = append(ev.Reads, q.Reads...)
		default:
			kept = append(kept, q)
		}
	}
	clear(r.queue[len(kept):])
	r.queue = kept
	return ev
}

// noteProgress takes a progress report; a failure is remembered for run.
func (r *Replica) noteProgress(p wal.Progress) {
	r.progress = p
	r.timeDurable(p.DurableIndex)
	if p.Err != nil && r.failErr == nil {
		r.failErr = p.Err
	}
}

// advanceDue reports whether the core has not yet been told the newest
// durable index.
func (r *Replica) advanceDue() bool {
	p, a := r.progress, r.advanced
	return r.failErr == nil && (p.DurableIndex != a.DurableIndex || p.DurableTerm != a.DurableTerm)
}

// advance hands the core the WAL's durable index with the term of that
// entry (rule 4).
func (r *Replica) advance() {
	p := r.progress
	r.advanced = p
	info := raft.AdvanceInfo{DurableIndex: p.DurableIndex, DurableTerm: p.DurableTerm}
	if r.bugs&BugAdvanceLastTerm != 0 {
		if t, err := r.w.Term(r.w.LastIndex()); err == nil {
			info.DurableTerm = t
		}
	}
	r.node.Advance(info)
}

// reportFailure tells the core that the WAL failed: it acknowledges
// nothing from now on. Whatever waited on a submission is dropped, and
// queued inputs are handed to the core, which refuses them.
func (r *Replica) reportFailure() {
	r.failReported = true
	r.stats.WALFailures.Add(1)
	markWALFailed.Hit()
	r.log.Error("replica: WAL FAILED: acknowledging nothing, granting no vote, until restarted", "err", r.failErr,
		"durable_index", r.progress.DurableIndex)
	r.node.Advance(raft.AdvanceInfo{Failed: true, Reason: r.failErr.Error()})
	if r.holdTicket != 0 {
		r.stepLost = true
	}
	r.holdTicket = 0
	r.stats.MessagesDropped.Add(uint64(len(r.stash)))
	r.stash = nil
	r.processReadies()
}

// hold holds inputs back until the WAL's progress covers ticket.
func (r *Replica) hold(ticket uint64) {
	r.holdTicket = max(r.holdTicket, ticket)
	r.stats.Holds.Add(1)
}

// release ends a hold: the hard state and the truncation it waited for are
// durable, so the core's persistence window closes (raft.Node.Persisted,
// the spec's Persist) and the messages that waited for it leave.
func (r *Replica) release() {
	r.holdTicket = 0
	r.node.Persisted()
	if len(r.stash) > 0 {
		r.send(r.stash)
		r.stash = nil
	}
}

// walError records a failed submission: the WAL refused it because it has
// failed (or could not take it). The core is told in run.
func (r *Replica) walError(what string, err error) {
	if r.failErr == nil {
		r.failErr = fmt.Errorf("%s: %w", what, err)
	}
}

// input hands one event to the core.
func (r *Replica) input(ev Event) {
	switch ev.Kind {
	case EventMessage:
		r.step(&ev.Msg)
	case EventTick:
		r.node.Tick()
		r.tickSnapshots()
	case EventJob:
		r.jobDone(ev.Job)
	case EventPropose:
		r.propose(ev.Proposals)
	case EventRead:
		r.readsWaiting = append(r.readsWaiting, ev.Reads...)
		r.startReadRound()
	case EventTransfer:
		if err := r.node.TransferLeadership(ev.To); err != nil {
			r.log.Warn("replica: leadership transfer refused", "to", uint64(ev.To), "err", err)
		}
	case EventCampaign:
		if err := r.node.Campaign(); err != nil {
			r.refusedPromotion(err)
		}
	case EventChangeConfig:
		r.changeConfig(ev.Change)
	case EventFenceState:
		r.node.FenceStateDiverged(ev.Reason)
		r.log.Error("replica: FENCE SET: the state check found my state diverged; no vote, no campaign until restarted", "why", ev.Reason)
	}
}

// step verifies an incoming message and hands it to the core.
func (r *Replica) step(m *Message) {
	r.stats.MessagesReceived.Add(1)
	if m.Type == raft.MsgSnap {
		r.handleSnapMessage(m)
		return
	}
	if m.Type == raft.MsgApp && r.bugs&BugNoChainCheck == 0 {
		if err := r.verifyApp(m); err != nil {
			r.refuse(m, err)
			return
		}
		for k, e := range m.Entries {
			r.ingress[e.Index] = m.Records[k]
		}
	}
	if err := r.node.Step(m.Message); err != nil && !errors.Is(err, raft.ErrWALFailed) {
		r.stats.MessagesInvalid.Add(1)
		r.alert.log(r.log, "invalid", "replica: message refused by the core", "from", uint64(m.From), "type", m.Type.String(), "err", err)
	}
}

// refuse counts and reports an AppendEntries that failed verification. It
// is dropped (the leader retries; a persistent mismatch is a loud, rate-
// limited alert, never a loop of refusals on the wire). Damage to this
// replica's own record fails its WAL so that recovery rules on it.
func (r *Replica) refuse(m *Message, err error) {
	switch {
	case errors.Is(err, ErrRecord):
		r.stats.RecordsRefused.Add(1)
		markRecordRefused.Hit()
		r.alert.log(r.log, "record", "replica: shipped record refused", "from", uint64(m.From), "err", err)
	case errors.Is(err, wal.ErrCorrupt):
		r.stats.LocalCorruptions.Add(1)
		r.log.Error("replica: my own log record failed verification while checking a leader's chain", "from", uint64(m.From), "err", err)
		r.walError("local record damaged", err)
	case errors.Is(err, ErrChain):
		r.stats.ChainMismatches.Add(1)
		r.alert.log(r.log, "chain", "replica: CHAIN MISMATCH: the leader's history differs from mine at an index where our terms agree; refusing its entries",
			"from", uint64(m.From), "term", m.Term, "prev_index", m.PrevLogIndex, "err", err)
	default:
		r.stats.RecordsRefused.Add(1)
		r.alert.log(r.log, "record", "replica: AppendEntries refused", "from", uint64(m.From), "err", err)
	}
}

// propose hands proposals to the core as one batch.
func (r *Replica) propose(ps []Proposal) {
	if len(ps) == 0 {
		return
	}
	data := make([][]byte, len(ps))
	for k, p := range ps {
		data[k] = p.Data
	}
	first, err := r.node.Propose(data...)
	if err != nil {
		err = proposeError(err)
		for _, p := range ps {
			p.Done(Result{Err: err})
		}
		r.stats.ProposalsRefused.Add(uint64(len(ps)))
		return
	}
	var now time.Time
	if r.timing() {
		now = r.cfg.Now()
	}
	for k, p := range ps {
		at := p.At
		if at.IsZero() {
			at = now
		}
		r.proposals = append(r.proposals, pendingProposal{index: first + uint64(k), done: p.Done, proposedAt: at})
	}
	r.stats.Proposals.Add(uint64(len(ps)))
	r.stats.ProposalBatches.Add(1)
}

// Close stops the replica and closes its WAL. Pending proposals and reads
// are answered with ErrClosed (their outcome unknown for proposals).
func (r *Replica) Close() error {
	for _, p := range r.proposals {
		p.done(Result{Index: p.index, Term: p.term, Err: ErrClosed})
	}
	r.proposals, r.durableTimed = nil, 0
	r.failReads(ErrClosed)
	if r.snaps != nil {
		r.snaps.closeSnapshots()
	}
	return r.w.Close()
}
