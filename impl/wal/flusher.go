package wal

import (
	"fmt"
	"time"
)

// The group-commit flusher.
//
// In the default mode one goroutine (runFlusher) owns all log and hard-state writes,
// and one (runPreparer) makes spare segment files; both loop over the steps of
// step.go, the same steps a caller takes in stepped mode. Submissions only encode
// records into memory, queue them as pending work and ring a doorbell. The flusher
// takes everything pending at once, writes it as one batch per segment, issues one
// fdatasync for it, and only then advances the durable index and wakes waiters.
// Appends that arrive during the fdatasync queue up and form the next batch: with
// many appenders, batches grow until one fdatasync carries what arrived during the
// previous one.
//
// Why no wakeup can be lost. The flusher waits on a condition, not on a signal: before
// every wait it re-reads, under mu, whether a step is due (runStep's nextStepLocked).
// The doorbell (wakeCh) is a channel with a buffer of one, rung without blocking after
// the work is queued under mu. Take the flusher's check under mu at time t. Work
// queued before t is seen by the check itself. Work queued after t rings the bell
// after t; the flusher drained the bell no later than its previous check, so either
// this ring fills the empty buffer or the buffer is already full; either way the
// flusher's next receive returns at once and it checks again. A ring is never needed
// for correctness of the check, only to end a wait, and a wait can only start after a
// check. Waiters on the Progress use the same pattern: they read durableCh under mu
// together with what they wait for, and the flusher closes that channel under mu after
// changing it, so a waiter that saw the old value holds the channel that will be
// closed. TestAppendDuringSyncFlusher makes "an append lands during an fdatasync"
// deterministic with a gated disk.

// runFlusher is the flusher goroutine: it performs every step but StepPrepare.
func (w *WAL) runFlusher() {
	defer close(w.doneCh)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		kind, deadline, hasDeadline, _ := w.runStep(driverFlusher)
		if kind == StepPublish && w.opts.bugs&bugEdgeTriggered != 0 {
			// The defect: consume the doorbell rung during the cycle, then wait for a
			// new ring instead of checking for work first.
			select {
			case <-w.wakeCh:
			default:
			}
			select {
			case <-w.wakeCh:
			case <-w.closeCh:
			}
		}
		if kind != StepNone {
			continue
		}
		w.mu.Lock()
		failed, closing := w.failErr != nil, w.closing
		w.mu.Unlock()
		switch {
		case failed:
			<-w.closeCh // stay out of the way; reopening recovers from the disk
			return
		case closing:
			return // closing makes every step due at once: none left means done
		}
		var timerC <-chan time.Time
		if hasDeadline {
			d := deadline.Sub(w.clock.Now())
			if d <= 0 {
				continue
			}
			timer.Reset(d)
			timerC = timer.C
		}
		select {
		case <-w.wakeCh:
		case <-w.closeCh:
		case <-timerC:
		}
		timer.Stop()
	}
}

// runPreparer is the preparer goroutine: it performs StepPrepare. Spares are an
// optimisation only: one that cannot be made is logged and skipped.
func (w *WAL) runPreparer() {
	defer close(w.prepDone)
	for {
		if kind, _, _, _ := w.runStep(driverPreparer); kind != StepNone {
			continue
		}
		select {
		case <-w.prepCh:
		case <-w.closeCh:
			return
		}
	}
}

// ring rings a doorbell channel of capacity one without blocking.
func ring(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// publishStep is StepPublish: it records where the job's records live, advances the
// durable index, Synced and the hard state to what the job made durable, and wakes
// waiters. Placements and durability above inflightCap are void: a truncation or
// reset after the work was taken removed those indexes. Called with ioMu held.
func (w *WAL) publishStep() {
	j := w.job
	w.job = nil
	w.idleFrom = w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failErr != nil {
		return // failed meanwhile (a read found damage): nothing advances
	}
	limit, limitTerm := j.target.index, j.target.term
	if w.opts.bugs&bugPublishTip != 0 {
		limit, limitTerm = w.tip.index, w.tip.term
	}
	if w.inflightCap < limit {
		limit, limitTerm = w.inflightCap, w.inflightCapTerm
	}
	for _, p := range j.placed {
		if p.index <= w.base.index || p.index > limit {
			continue
		}
		m := &w.metas[p.index-w.base.index-1]
		if m.checksum == p.checksum && m.seg == nil {
			m.seg, m.offset = p.seg, p.offset
		}
	}
	d := w.durableIndex.Load()
	if limit < d || limit > w.tip.index {
		violated("publish of %d with durable index %d, last index %d", limit, d, w.tip.index)
	}
	w.durableIndex.Store(limit)
	w.durableTerm = limitTerm
	if j.hs != nil {
		w.hsDurable = *j.hs
	}
	w.inflight = false
	w.synced = max(w.synced, j.ticket)
	w.settleLocked()
	if len(w.pending) > 0 {
		w.gatherFrom = w.idleFrom
	}
	if w.opts.bugs&bugEdgeTriggered != 0 {
		w.rung = false // the defect: the doorbell consumed after the flush
	}
	w.stats.flushes.Add(1)
	w.stats.recordsSynced.Add(uint64(len(j.placed)))
	if w.opts.ObserveFlush != nil {
		w.opts.ObserveFlush(len(j.placed))
	}
	w.evictLocked()
	w.notifyLocked()
}

// notifyLocked wakes everyone waiting on durableCh.
func (w *WAL) notifyLocked() {
	close(w.durableCh)
	w.durableCh = make(chan struct{})
}

// evictLocked trims the tail cache to TailCacheBytes, keeping every record that is not
// yet on disk.
func (w *WAL) evictLocked() {
	for w.cacheBytes > w.opts.TailCacheBytes && w.cacheFirst <= w.tip.index {
		if w.metas[w.cacheFirst-w.base.index-1].seg == nil {
			return
		}
		w.cacheBytes -= w.cache.dropFront(1)
		w.cacheFirst++
	}
}

// seal writes an empty batch after an unvouched last batch, so that recovery can tell
// damage to that batch from a torn write; the caller fdatasyncs it. When the segment
// has no room, a new segment does the same job. Called with ioMu held and the active
// segment synced. Both callers know the last batch is unvouched: the seal step is taken
// only when sealDueLocked says so, under the ioMu it then holds to the write, and Open
// sets unvouched itself.
func (w *WAL) seal() error {
	seg := w.active
	assert(seg != nil && seg.unvouched, "seal with no unvouched last batch")
	assert(!seg.dirty, "seal of %s while its last batch is not synced", seg.name)
	if seg.room() < 0 {
		return w.startSegment(w.diskTip, 0)
	}
	_, _, err := w.writeBatch(seg, nil, w.diskTip, nil)
	return err
}

// fail puts the WAL in the failed state, loudly: the durable index never advances
// again, appends are refused, waiters get the error. The process stays up.
func (w *WAL) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failErr != nil {
		return
	}
	w.failErr = fmt.Errorf("%w: %w", ErrFailed, err)
	markFailed.Hit()
	w.pending = nil
	w.inflight = false
	w.log.Error("wal: FAILED: a write, an fdatasync or a read of durable data failed; nothing past durable_index will ever be reported durable by this WAL; reopen it to recover from what is on disk",
		"err", err, "durable_index", w.durableIndex.Load(), "last_index", w.tip.index)
	w.notifyLocked()
}
