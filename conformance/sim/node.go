package sim

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
	"github.com/durableraft/durableraft/trace"
)

// dataDir is where each node's WAL lives on its own disk.
const dataDir = "/data"

// Node is one member: its disk (which survives crashes), and while it is
// up, its WAL and replica (the process).
type Node struct {
	s    *Sim
	ID   raft.NodeID
	disk *vfs.MemFS
	w    *wal.WAL
	r    *replica.Replica
	sm   *machine
	// epoch counts lives: events scheduled in an earlier life are void.
	epoch uint64
	boots int
	// rate is the node's clock rate (skew): a tick takes Tick/rate;
	// clockOffsetMs is its wall clock's offset (clockMs).
	rate          float64
	clockOffsetMs int64
	// lastProposeAt: the last proposal this node's service made (for the
	// idle no-op).
	lastProposeAt time.Duration
	// stepPending is set while a WAL step is scheduled, wakePending while
	// a wake-up at the WAL's next deadline is (new work does not wait for
	// it).
	stepPending, wakePending bool
	// notifyAt orders progress notifications (a late one delays those
	// after it: a notification channel is FIFO).
	notifyAt time.Duration
	// durablePrev, durableCur: the last two durable indexes the WAL
	// published (a flip may only hit records at or below durablePrev:
	// never the last synced batch, hole 2 of the holes issue).
	durablePrev, durableCur uint64
	// down: what the node had durable when it went down (for the checks).
	stopped stopState
	// flipPending: a bit was flipped at rest; the next boot must say
	// TRUNCATED (or the damage is beyond the record's reach).
	flipPending bool
	// batchDamaged: a whole-cluster power loss damaged the last synced
	// batch (powerloss.go); the next boot must not say CLEAN, and may lose
	// what was durable.
	batchDamaged bool
	diskFull     bool
	// faultsArmed: a disk fault is injected and not yet struck (a crash at
	// an I/O point, a failing fdatasync, a full disk).
	faultsArmed bool
	// restartPending: an operator restart is scheduled.
	restartPending bool
}

// stopState is what a down node's disk is known to hold: the durable
// index the WAL last published and the terms up to it.
type stopState struct {
	durable   uint64
	terms     []uint64 // terms[i-1] is the term at index i, from first on
	truncated bool
	// first is the WAL's first index: every index below it is in the
	// node's snapshot (compaction never passes one), held durably.
	first uint64
}

func newNode(s *Sim, id raft.NodeID) *Node {
	seed := s.opts.Seed ^ uint64(id)<<40
	if s.opts.Skew > 0 {
		s.Counts.SkewedClocks++
	}
	n := &Node{s: s, ID: id, disk: vfs.NewMemFS(vfs.MemConfig{Seed: seed}),
		rate: 1 + s.opts.Skew*(2*s.rng.Float64()-1), clockOffsetMs: s.rng.Int64N(2*clockOffsetMsMax+1) - clockOffsetMsMax}
	if s.opts.Skew <= 0 {
		n.clockOffsetMs = 0 // no skew: every clock reads the same
	}
	return n
}

// simClock is the virtual clock as the WAL sees it.
type simClock struct{ s *Sim }

var epoch0 = time.Unix(1_700_000_000, 0)

func (c simClock) Now() time.Time { return epoch0.Add(c.s.now) }

// traceSink appends a node's core events to the run's trace.
type traceSink struct{ s *Sim }

func (t traceSink) Event(e trace.Event) { t.s.addEvent(e) }

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// walOptions are small segments and blocks, so that rotation, seals and
// reuse happen often.
func (n *Node) walOptions() wal.Options {
	o := wal.Options{Stepped: true, Clock: simClock{n.s}, SegmentBytes: 64 << 10, BlockBytes: 512,
		EntryBytesMax: 4 << 10, TailCacheBytes: 16 << 10, SealDelay: 50 * time.Millisecond, Logger: discard}
	if n.s.opts.Snapshots != nil {
		o.SegmentBytes = 12 << 10 // compaction drops whole segments: make them small
	}
	if b := n.s.opts.SegmentBytes; b != 0 {
		o.SegmentBytes, o.EntryBytesMax = b, int(b/4)
	}
	return o
}

// boot opens the WAL and starts a replica on it.
func (n *Node) boot() error {
	n.epoch++
	n.boots++
	w, rec, err := wal.Open(n.disk, dataDir, n.walOptions())
	if err != nil {
		if errors.Is(err, vfs.ErrCrashed) {
			n.s.Counts.IOCrashes++
			n.crashed("crash during recovery")
			return nil
		}
		return fmt.Errorf("sim: n%d: wal.Open: %w", n.ID, err)
	}
	switch rec.Verdict {
	case wal.Truncated:
		n.s.Counts.VerdictTruncated++
	case wal.Ambiguous:
		n.s.Counts.VerdictAmbiguous++
		n.s.declarePowerLosses()
	}
	n.checkRecovered(w, rec)
	o := n.s.opts
	cfg := raft.Config{ID: n.ID, Voters: n.s.initVoters(), Joining: !slices.Contains(n.s.initVoters(), n.ID), ElectionTick: 10, HeartbeatTick: 1,
		Rand:    rand.New(rand.NewPCG(o.Seed^uint64(n.ID)<<32, uint64(n.boots))),
		PreVote: o.PreVote, CheckQuorum: o.CheckQuorum, MsgEntriesMax: o.MsgEntriesMax, InflightMsgsMax: o.InflightMsgsMax,
		TestingBugs: o.CoreBugs}
	if o.Trace {
		cfg.Trace = traceSink{n.s}
	}
	n.w = w
	n.sm = newMachine(n)
	r, err := replica.New(replica.Config{Raft: cfg, WAL: w, Recovery: rec, StateMachine: n.sm, Transport: n,
		Logger: n.replicaLogger(), TestingBugs: o.RuntimeBugs, Snapshots: n.snapshotOptions(), NoPeerRepair: !o.PeerRepair})
	if err != nil {
		if errors.Is(err, vfs.ErrCrashed) || n.disk.Down() {
			n.s.Counts.IOCrashes++
			n.w = nil
			n.crashed("crash during the boot with snapshots")
			return nil
		}
		return fmt.Errorf("sim: n%d: %w", n.ID, err)
	}
	n.r = r
	p := w.Progress()
	n.durablePrev, n.durableCur = p.DurableIndex, p.DurableIndex
	n.flipPending, n.batchDamaged = false, false
	n.s.logf("n%d booted (%s, %s): %s", n.ID, rec.Verdict, rec.Case, n.describe())
	n.afterHandle()
	return nil
}

func (s *Sim) voters() []raft.NodeID {
	ids := make([]raft.NodeID, len(s.Nodes))
	for k := range ids {
		ids[k] = raft.NodeID(k + 1)
	}
	if len(ids) == 0 {
		for k := 1; k <= s.opts.N; k++ {
			ids = append(ids, raft.NodeID(k))
		}
	}
	return ids
}

// Send implements replica.Transport: the network takes every message,
// after the check that what it depends on is durable.
func (n *Node) Send(msgs []replica.Message) {
	for _, m := range msgs {
		n.s.check.persistBeforeSend(n, &m)
		n.s.net.send(m)
	}
}

// handle gives the replica an input and schedules the disk work it caused.
func (n *Node) handle(ev replica.Event) {
	if n.r == nil {
		return
	}
	n.r.Handle(ev)
	if n.disk.Down() {
		// A crash armed at an I/O point struck inside the step (a
		// snapshot chunk written, a file removed).
		n.s.Counts.IOCrashes++
		n.crashed("crash at an I/O point (inside a step)")
		return
	}
	n.afterHandle()
}

// afterHandle runs the checks that follow a step of this node and
// schedules its next WAL step. A crash armed at an I/O point is disarmed
// while the replica holds inputs back for a submission (see canCrash).
func (n *Node) afterHandle() {
	if n.r == nil {
		return
	}
	n.s.check.observe(n)
	n.s.check.durableTruth(n)
	if !n.restartPending {
		if f := n.r.Status().Failure; f != "" {
			n.s.logf("n%d failed: %s", n.ID, f)
			n.operatorRestart()
		}
	}
	if n.faultsArmed && !n.canCrash() {
		n.disarm()
	}
	n.scheduleDisk()
	n.scheduleJobs()
}

// disarm removes the disk faults not yet struck.
func (n *Node) disarm() {
	n.disk.ClearFaults()
	if n.diskFull {
		n.disk.SetCapacity(0)
		n.diskFull = false
	}
	n.faultsArmed = false
}

// canCrash reports whether a crash now stays inside what the spec models.
// While the replica holds inputs back for a hard-state write or a
// truncation's sync, the core has taken a step whose effects are not yet
// durable: the spec's actions are atomic, so a crash there (which the
// runtime survives: nothing that depends on the step has left) is a
// behaviour the spec cannot express yet. Those crashes are off until the
// spec models the window (holes issue, item 1).
func (n *Node) canCrash() bool {
	return n.r != nil && !n.r.Status().Holding
}

// scheduleDisk schedules the WAL's next step at a virtual latency for its
// kind (a slow fdatasync now and then), or a wake-up at the WAL's next
// deadline (SyncDelay, SealDelay).
func (n *Node) scheduleDisk() {
	if n.w == nil || n.stepPending {
		return
	}
	kind := n.w.NextStep()
	ep := n.epoch
	if kind == wal.StepNone {
		if t, ok := n.w.NextDeadline(); ok && !n.wakePending {
			d := t.Sub(simClock{n.s}.Now())
			n.wakePending = true
			n.s.at(max(d, 0), func() {
				if n.epoch == ep {
					n.wakePending = false
					n.scheduleDisk()
				}
			})
		}
		return
	}
	n.stepPending = true
	n.s.at(n.latency(kind), func() {
		if n.epoch != ep {
			return
		}
		n.stepPending = false
		n.walStep()
	})
}

// latency is how long a WAL step takes.
func (n *Node) latency(kind wal.StepKind) time.Duration {
	s := n.s
	if kind != wal.StepSync {
		return s.randDur(5*time.Microsecond, 50*time.Microsecond)
	}
	if s.opts.Faults.SlowSyncs && !s.healing && s.chance(s.opts.Rates.SlowSync) {
		s.Counts.SlowSyncs++
		return s.randDur(50*time.Millisecond, 3*10*s.opts.Tick*2)
	}
	return s.randDur(100*time.Microsecond, 2*time.Millisecond)
}

// walStep runs one WAL step and reports the progress to the replica.
func (n *Node) walStep() {
	err := n.w.Step()
	if errors.Is(err, vfs.ErrCrashed) || n.disk.Down() {
		// (A step may swallow the crash: a spare segment that cannot be
		// made is logged, not an error. The disk says it is down.)
		n.s.Counts.IOCrashes++
		n.crashed("crash at an I/O point")
		return
	}
	p := n.w.Progress()
	if p.DurableIndex != n.durableCur {
		n.durablePrev, n.durableCur = n.durableCur, p.DurableIndex
	}
	n.notify(p)
	if p.Err != nil {
		return // the replica reports it; afterHandle schedules the restart
	}
	n.scheduleDisk()
}

// operatorRestart: a node whose WAL failed stays up, failed and saying so
// (it never exits on its own); an operator restarts it a little later.
func (n *Node) operatorRestart() {
	n.restartPending = true
	ep := n.epoch
	n.s.at(n.s.randDur(50*time.Millisecond, 300*time.Millisecond), func() {
		if n.epoch == ep && n.r != nil {
			n.crash("operator restart after a WAL failure")
		}
	})
}

// notify delivers a progress report: at once, or late (LateNotify), but
// never before an earlier one.
func (n *Node) notify(p wal.Progress) {
	s := n.s
	at := s.now
	if s.opts.Faults.LateNotify && !s.healing && s.chance(s.opts.Rates.LateNotify) {
		s.Counts.LateNotifies++
		at += s.randDur(0, s.opts.Rates.LateNotifyMax)
	}
	at = max(at, n.notifyAt)
	n.notifyAt = at
	ep := n.epoch
	if at == s.now {
		n.handle(replica.Event{Kind: replica.EventWAL, Progress: p})
		return
	}
	s.at(at-s.now, func() {
		if n.epoch == ep {
			if cur := n.w.Progress(); p.DurableIndex > cur.DurableIndex || (p.DurableIndex == cur.DurableIndex && p.DurableTerm != cur.DurableTerm) {
				s.Counts.StaleReports++ // from before a truncation
			}
			n.handle(replica.Event{Kind: replica.EventWAL, Progress: p})
		}
	})
}

// scheduleTick keeps the node's clock running (ticks while it is down are
// lost, as a stopped process's are).
func (n *Node) scheduleTick() {
	d := time.Duration(float64(n.s.opts.Tick) / n.rate)
	n.s.at(d, func() {
		n.handle(replica.Event{Kind: replica.EventTick})
		n.idleNoop()
		n.scheduleTick()
	})
}

// crash is a power loss: the disk loses what a crash may lose, the process
// is gone. It restarts after a while.
func (n *Node) crash(why string) {
	if n.r == nil {
		return
	}
	if !n.canCrash() {
		// Try again once the hold is over.
		ep := n.epoch
		n.s.at(time.Millisecond, func() {
			if n.epoch == ep {
				n.crash(why)
			}
		})
		return
	}
	n.disk.Crash()
	n.crashed(why)
}

// crashed records a dead process (its disk already crashed) and schedules
// the restart.
func (n *Node) crashed(why string) {
	s := n.s
	if n.r != nil {
		n.stopped = n.stopStateNow()
		s.noteSnapshots(n.r.Status().Snapshots)
		s.Counts.Crashes++
		if n.r.Status().StepLost && s.TraceCheckable < 0 {
			// The spec cannot express a step undone by a WAL failure (holes
			// issue, item 1): the trace is checked up to here.
			s.TraceCheckable = len(s.Events)
			s.Counts.LostSteps++
		}
	}
	s.check.crashed(n)
	n.r, n.w = nil, nil
	n.epoch++
	n.stepPending, n.wakePending = false, false
	n.faultsArmed = false
	n.restartPending = false
	n.notifyAt = 0
	s.logf("n%d crashed: %s", n.ID, why)
	ep := n.epoch
	s.at(s.randDur(20*time.Millisecond, 400*time.Millisecond), func() {
		if n.epoch == ep && n.r == nil {
			n.restart("after a crash")
		}
	})
}

// stopStateNow is what the node's disk holds durably as the WAL last said.
func (n *Node) stopStateNow() stopState {
	p := n.w.Progress()
	st := stopState{durable: p.DurableIndex, truncated: n.r.Status().HardState.TruncatedAtTerm != 0}
	first := n.w.FirstIndex()
	st.first = first
	for i := first; i <= p.DurableIndex; i++ {
		t, err := n.w.Term(i)
		if err != nil {
			break
		}
		st.terms = append(st.terms, t)
	}
	if first > 1 {
		st.terms = append(make([]uint64, first-1), st.terms...)
	}
	return st
}

// restart brings the node back: the disk reboots, the WAL recovers.
func (n *Node) restart(why string) {
	n.disk.Restart()
	n.disarm() // a fault armed in the last life does not carry over

	n.s.Counts.Restarts++
	n.s.logf("n%d restarting: %s", n.ID, why)
	if err := n.boot(); err != nil {
		n.s.violation("n%d cannot boot: %v", n.ID, err)
	}
}

// walFailed reports whether the node's WAL failed.
func (n *Node) walFailed() bool { return n.w != nil && n.w.Progress().Err != nil }

// healDisk removes the disk faults a healed phase must not have.
func (n *Node) healDisk() { n.disarm() }

// committedOwnTerm: the node leads and has committed an entry of its term.
func (n *Node) committedOwnTerm() bool {
	if n.r == nil {
		return false
	}
	st := n.r.Status()
	if st.Role != raft.RoleLeader || st.Commit == 0 {
		return false
	}
	t, err := n.w.Term(st.Commit)
	return err == nil && t == st.HardState.Term
}

// describe prints the node in one line.
func (n *Node) describe() string {
	if n.r == nil {
		return fmt.Sprintf("n%d: down", n.ID)
	}
	st := n.r.Status()
	s := fmt.Sprintf("n%d: %v term=%d vote=%d lead=%d last=%d durable=%d commit=%d applied=%d learned=%d verdict=%s fence=%s",
		n.ID, st.Role, st.HardState.Term, st.HardState.Vote, st.Lead, st.Last, st.Durable, st.Commit, st.AppliedIndex,
		st.HardState.LearnedCommit, st.Verdict, st.Fence)
	if st.WALFailed {
		s += " WAL-FAILED"
	}
	if st.Holding {
		s += " holding"
	}
	if st.Pending > 0 || st.Queued > 0 || n.s.check.pending[n.ID] > 0 {
		s += fmt.Sprintf(" pending=%d queued=%d waiting=%d", st.Pending, st.Queued, n.s.check.pending[n.ID])
	}
	return s
}
