package wal

import (
	"fmt"
	"math"
	"time"
)

// The pipeline's steps. Every write to the log and the hard-state file goes through
// them, in both modes: the flusher and preparer goroutines loop over them in the
// default mode, the caller performs them one by one in stepped mode (Options.Stepped).
//
// A group-commit cycle (a job) takes all pending work at once and then alternates
// StepWrite and StepSync until everything it took is written and fdatasync'd, then
// StepPublish reports it. A write phase ends where an ordering rule needs an fdatasync
// first (a barrier): a batch goes to a segment only after every earlier batch of it is
// synced, a segment starts only after the active one is synced, a hard-state slot is
// written only when the other slot is synced, and log work submitted after a hard
// state is written only once the hard state's first slot is synced (so it is
// recoverable). So one cycle with only appends is StepWrite, StepSync, StepPublish;
// one with a hard state and appends submitted after it is StepWrite (slot A),
// StepSync, StepWrite (slot B and the batch), StepSync, StepPublish.

// StepKind is what the next step does.
type StepKind uint8

const (
	// StepNone: nothing to do now (maybe later: NextDeadline).
	StepNone StepKind = iota
	// StepWrite takes all pending work if no cycle is in flight, then writes as much of
	// it as the ordering rules allow before an fdatasync: batches, segment starts (a
	// segment's creation, with its own header fdatasync and directory syncs, is part
	// of the write), truncation and reset segments, hard-state slots, releases of
	// compacted segments.
	StepWrite
	// StepSync fdatasyncs what the write phase wrote: the step a simulator delays to
	// model a slow disk. An fdatasync that fails fails the WAL.
	StepSync
	// StepPublish advances the durable index, Synced and the hard state to what the
	// cycle made durable, and wakes waiters. It performs no I/O.
	StepPublish
	// StepSeal writes a seal (an empty batch vouching for the last one) after
	// SealDelay of idleness, or at Close; its fdatasync is the StepSync that follows.
	StepSeal
	// StepPrepare makes a spare zero-filled segment file ahead of rotation.
	StepPrepare
)

var stepKindNames = [...]string{"none", "write", "sync", "publish", "seal", "prepare"}

func (k StepKind) String() string {
	if int(k) < len(stepKindNames) {
		return stepKindNames[k]
	}
	return fmt.Sprintf("StepKind(%d)", uint8(k))
}

type jobPhase uint8

const (
	phaseWrite jobPhase = iota + 1
	phaseSync
	phasePublish
)

// job is the group-commit cycle (or seal) in flight. Owned by the driver (ioMu).
type job struct {
	ops []op
	// next is the op being written; recs are its records still to write (opRecords),
	// started says recs was set, slotB says its slot A is written (opHardState).
	next    int
	recs    [][]byte
	started bool
	slotB   bool
	// slotAUnsynced: a hard state's slot A was written in this phase; later log work
	// waits for its fdatasync.
	slotAUnsynced bool
	hsSlot        hardStateSlot
	// hs is the last hard state the job wrote to both slots, nil if none.
	hs     *hardStateSlot
	placed []placement
	// target is the tip when the job was taken, ticket the last ticket it covers.
	target chainTip
	ticket uint64
	phase  jobPhase
	// seal: a seal job (nothing to publish).
	seal bool
}

// driver says who asks for a step: the flusher goroutine (everything but StepPrepare),
// the preparer goroutine (StepPrepare only), or the caller in stepped mode (all).
type driver uint8

const (
	driverFlusher driver = iota + 1
	driverPreparer
	driverStepped
)

// NextStep says what Step would do now, given the clock: StepNone when nothing is due
// (work still inside SyncDelay and not hurried, no seal due). In the default mode the
// WAL's goroutines take the steps and NextStep reports StepNone.
func (w *WAL) NextStep() StepKind {
	if !w.opts.Stepped {
		return StepNone
	}
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nextStepLocked(w.clock.Now(), driverStepped)
}

// NextDeadline returns when NextStep may stop being StepNone with no new submission
// (the end of SyncDelay for pending work, or of SealDelay for an unvouched batch), so
// that a virtual-time simulator can schedule it. It returns false when NextStep is
// not StepNone or nothing is scheduled.
func (w *WAL) NextDeadline() (time.Time, bool) {
	if !w.opts.Stepped {
		return time.Time{}, false
	}
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	if w.nextStepLocked(now, driverStepped) != StepNone {
		return time.Time{}, false
	}
	return w.nextDeadlineLocked(now)
}

// Step performs the step NextStep reports (nothing for StepNone) in stepped mode. An
// I/O error fails the WAL and is returned (wrapping ErrFailed); on a failed WAL Step
// returns the failure. A spare file that cannot be made is logged and skipped.
func (w *WAL) Step() error {
	if !w.opts.Stepped {
		return fmt.Errorf("%w: Step called on a WAL not opened with Options.Stepped", ErrInvalid)
	}
	w.mu.Lock()
	err := w.failErr
	if err == nil && w.closed {
		err = ErrClosed
	}
	w.mu.Unlock()
	if err != nil {
		return err
	}
	_, _, _, err = w.runStep(driverStepped)
	return err
}

// drive performs steps (stepped mode) until done says so or none is due.
func (w *WAL) drive(done func() bool) {
	for !done() {
		if kind, _, _, err := w.runStep(driverStepped); err != nil || kind == StepNone {
			return
		}
	}
}

// runStep performs the next step for d, if any, and returns its kind; when there is
// none, also the deadline at which one may appear. This is the one code path of both
// modes.
func (w *WAL) runStep(d driver) (StepKind, time.Time, bool, error) {
	w.ioMu.Lock()
	w.mu.Lock()
	now := w.clock.Now()
	kind := w.nextStepLocked(now, d)
	var deadline time.Time
	var hasDeadline bool
	switch kind {
	case StepNone:
		deadline, hasDeadline = w.nextDeadlineLocked(now)
	case StepWrite:
		if w.job == nil {
			w.takeLocked()
		}
	case StepSeal:
		w.job = &job{ops: []op{{kind: opSeal}}, phase: phaseWrite, seal: true}
	}
	w.mu.Unlock()
	if kind == StepPrepare {
		w.ioMu.Unlock()
		w.prepareSpare()
		return kind, deadline, hasDeadline, nil
	}
	defer w.ioMu.Unlock()
	var err error
	switch kind {
	case StepWrite, StepSeal:
		err = w.writeStep()
	case StepSync:
		err = w.syncStep()
	case StepPublish:
		w.publishStep()
	}
	if err != nil {
		w.job = nil
		w.fail(err)
		return kind, deadline, hasDeadline, w.Err()
	}
	return kind, deadline, hasDeadline, nil
}

// nextStepLocked decides the next step for d. Called with ioMu and mu held.
func (w *WAL) nextStepLocked(now time.Time, d driver) StepKind {
	prepare := w.spareWanted && !w.closing
	switch {
	case w.failErr != nil:
		return StepNone
	case d == driverPreparer:
		if prepare {
			return StepPrepare
		}
		return StepNone
	case w.job != nil:
		return [...]StepKind{phaseWrite: StepWrite, phaseSync: StepSync, phasePublish: StepPublish}[w.job.phase]
	case d == driverStepped && prepare:
		// Before the next cycle, so that rotation finds a spare even under load.
		return StepPrepare
	case len(w.pending) > 0:
		if w.gatheredLocked(now) && (w.opts.bugs&bugEdgeTriggered == 0 || d != driverStepped || w.rung) {
			return StepWrite
		}
		return StepNone
	case w.sealDueLocked(now):
		return StepSeal
	}
	return StepNone
}

// gatheredLocked: the pending work has waited SyncDelay, or need not.
func (w *WAL) gatheredLocked(now time.Time) bool {
	return w.opts.SyncDelay <= 0 || w.hurry || w.closing || !now.Before(w.gatherFrom.Add(w.opts.SyncDelay))
}

// sealDueLocked: the last batch holds records nothing vouches for, and the pipeline
// has been idle for SealDelay (or the WAL is closing). Called with no job in flight
// and nothing pending.
func (w *WAL) sealDueLocked(now time.Time) bool {
	if w.active == nil || !w.active.unvouched {
		return false
	}
	return w.closing || (w.opts.SealDelay > 0 && !now.Before(w.idleFrom.Add(w.opts.SealDelay)))
}

// nextDeadlineLocked is when a step may become due with no new submission, given
// that none is due now.
func (w *WAL) nextDeadlineLocked(now time.Time) (time.Time, bool) {
	switch {
	case w.failErr != nil || w.job != nil || w.closing:
		return time.Time{}, false
	case len(w.pending) > 0:
		if !w.gatheredLocked(now) {
			return w.gatherFrom.Add(w.opts.SyncDelay), true
		}
		return time.Time{}, false
	case w.active != nil && w.active.unvouched && w.opts.SealDelay > 0:
		return w.idleFrom.Add(w.opts.SealDelay), true
	}
	return time.Time{}, false
}

// takeLocked starts a cycle with all pending work. Called with ioMu and mu held.
func (w *WAL) takeLocked() {
	w.job = &job{ops: w.pending, target: w.tip, ticket: w.ticketLast, phase: phaseWrite}
	w.pending = nil
	w.takenIndex = w.tip.index
	w.inflight = true
	w.inflightCap, w.inflightCapTerm = math.MaxUint64, 0
	w.hurry = false
}

// writeStep is StepWrite and StepSeal: it writes the job's ops until a barrier or the
// end, then moves the job to its fdatasync (or past it, when nothing is unsynced).
func (w *WAL) writeStep() error {
	j := w.job
	for j.next < len(j.ops) {
		done, err := w.writeOp(j, &j.ops[j.next])
		if err != nil {
			return err
		}
		if !done {
			break
		}
		j.next++
		j.recs, j.started, j.slotB = nil, false, false
	}
	dirty := w.active.dirty || w.hs.dirty
	if !dirty && j.next != len(j.ops) {
		violated("write phase stopped at op %d of %d with nothing to fdatasync", j.next, len(j.ops))
	}
	if dirty {
		j.phase = phaseSync
		return nil
	}
	w.endPhase(j)
	return nil
}

// writeOp writes what it can of o; false means a barrier: what this phase wrote must
// be fdatasync'd before o can go on.
func (w *WAL) writeOp(j *job, o *op) (bool, error) {
	switch o.kind {
	case opRecords:
		if !j.started {
			j.recs, j.started = o.recs, true
		}
		return w.writeRecords(j)
	case opTruncate, opReset:
		assert(!j.slotAUnsynced, "log work in the phase that wrote a hard state's slot A")
		if w.active.dirty {
			return false, nil
		}
		flags := uint16(0)
		if o.kind == opReset {
			flags = flagBase
		} else {
			markSuffixTruncated.Hit()
		}
		return true, w.startSegment(o.tip, flags)
	case opHardState:
		if w.hs.dirty {
			return false, nil
		}
		if !j.slotB {
			j.hsSlot = w.hs.next(o.hs, o.lost)
			j.slotB, j.slotAUnsynced = true, true
			return false, w.hs.writeSlot(j.hsSlot, 0)
		}
		if err := w.hs.writeSlot(j.hsSlot, hardStateSlotB); err != nil {
			return false, err
		}
		w.hs.last = j.hsSlot
		slot := j.hsSlot
		j.hs = &slot
		return true, nil
	case opRelease:
		err := w.releaseSegments(o.segs, true)
		w.mu.Lock()
		w.detached = removeSegments(w.detached, o.segs)
		w.mu.Unlock()
		return true, err
	case opSeal:
		return true, w.seal()
	}
	panic(fmt.Sprintf("wal: op kind %d", o.kind))
}

// removeSegments returns segs without the ones in drop.
func removeSegments(segs, drop []*segment) []*segment {
	kept := segs[:0]
	for _, s := range segs {
		found := false
		for _, d := range drop {
			found = found || s == d
		}
		if !found {
			kept = append(kept, s)
		}
	}
	clear(segs[len(kept):])
	return kept
}

// writeRecords writes the job's remaining records of the current op to the active
// segment, one batch per segment, starting a new segment when the next record does
// not fit; false at a barrier.
func (w *WAL) writeRecords(j *job) (bool, error) {
	for len(j.recs) > 0 {
		seg := w.active
		// Log work after a hard state waits until the hard state is recoverable: the
		// hard-state op ends the phase that writes slot A (a barrier), so no later op
		// of the job runs before slot A's fdatasync.
		if j.slotAUnsynced {
			violated("log work in the phase that wrote a hard state's slot A")
		}
		if seg.dirty {
			// A batch goes out only after every earlier batch in the segment is synced:
			// that is what makes its header a sync boundary.
			return false, nil
		}
		n, size := 0, int64(0)
		for n < len(j.recs) && size+int64(len(j.recs[n])) <= seg.room() {
			size += int64(len(j.recs[n]))
			n++
		}
		if n == 0 {
			assert(seg.writeOffset > int64(seg.hdr.blockBytes), "record of %d bytes does not fit an empty segment", len(j.recs[0]))
			if err := w.startSegment(w.diskTip, 0); err != nil {
				return false, err
			}
			continue
		}
		tip, placed, err := w.writeBatch(seg, j.recs[:n], w.diskTip, j.placed)
		j.placed = placed
		if err != nil {
			return false, err
		}
		w.diskTip = tip
		j.recs = j.recs[n:]
	}
	return true, nil
}

// syncStep is StepSync: it fdatasyncs what the phase wrote.
func (w *WAL) syncStep() error {
	j := w.job
	if w.opts.bugs&bugPublishBeforeSync != 0 && !j.seal && j.next == len(j.ops) {
		w.mu.Lock()
		limit, term := j.target.index, j.target.term
		if w.inflightCap < limit {
			limit, term = w.inflightCap, w.inflightCapTerm
		}
		if limit > w.durableIndex.Load() {
			w.durableIndex.Store(limit)
			w.durableTerm = term
			w.notifyLocked()
		}
		w.mu.Unlock()
	}
	if err := w.syncSegment(w.active); err != nil {
		return err
	}
	if err := w.hs.sync(); err != nil {
		return err
	}
	j.slotAUnsynced = false
	w.endPhase(j)
	return nil
}

// endPhase moves the job on after a phase whose writes are all fdatasync'd.
func (w *WAL) endPhase(j *job) {
	switch {
	case j.next < len(j.ops):
		j.phase = phaseWrite
	case j.seal:
		w.job = nil
	default:
		j.phase = phasePublish
	}
}
