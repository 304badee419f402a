package wal

import (
	"fmt"
	"math"
	"time"
)

// The group-commit flusher.
//
// One goroutine (runFlusher) owns all log writes. Appends only encode records into
// memory, queue them as pending work and ring a doorbell. The flusher takes everything
// pending at once, writes it as one batch per segment, issues one fdatasync, and only
// then advances the durable index and wakes waiters. Appends that arrive during the
// fdatasync queue up and form the next batch: with many appenders, batches grow until
// one fdatasync carries what arrived during the previous one.
//
// Why no wakeup can be lost. The flusher waits on a condition, not on a signal: before
// every wait it re-reads, under mu, whether work is pending (the gap between what was
// submitted and what was taken). The doorbell (wakeCh) is a channel with a buffer of
// one, rung without blocking after the work is queued under mu. Take the flusher's
// check under mu at time t. Work queued before t is seen by the check itself. Work
// queued after t rings the bell after t; the flusher drained the bell no later than
// its previous check, so either this ring fills the empty buffer or the buffer is
// already full; either way the flusher's next receive returns at once and it checks
// again. A ring is never needed for correctness of the check, only to end a wait, and
// a wait can only start after a check. Waiters on the durable index use the same
// pattern: they read durableCh under mu together with the index, and the flusher
// closes that channel under mu after advancing the index, so a waiter that saw the old
// index holds the channel that will be closed.

// runFlusher is the flusher goroutine.
func (w *WAL) runFlusher() {
	defer close(w.doneCh)
	var sealTimer *time.Timer
	var sealC <-chan time.Time
	defer func() {
		if sealTimer != nil {
			sealTimer.Stop()
		}
	}()
	for {
		w.mu.Lock()
		pending, failed, closing := len(w.pending) > 0, w.failErr != nil, w.closing
		w.mu.Unlock()
		switch {
		case failed:
			<-w.closeCh // stay out of the way; reopening recovers from the disk
			return
		case pending:
			if w.opts.SyncDelay > 0 && !closing {
				w.gather()
			}
			w.flushOnce()
			if w.opts.SealDelay > 0 {
				if sealTimer == nil {
					sealTimer = time.NewTimer(w.opts.SealDelay)
				} else {
					sealTimer.Reset(w.opts.SealDelay)
				}
				sealC = sealTimer.C
			}
			continue
		case closing:
			w.sealIfNeeded()
			return
		}
		select {
		case <-w.wakeCh:
		case <-w.closeCh:
		case <-sealC:
			sealC = nil
			w.sealIfNeeded()
		}
	}
}

// gather waits up to SyncDelay for more work to join the batch. It only delays the
// fdatasync; nothing is reported durable before it.
func (w *WAL) gather() {
	t := time.NewTimer(w.opts.SyncDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.closeCh:
	case <-w.hurryCh:
	}
}

// ring rings a doorbell channel of capacity one without blocking.
func ring(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// flushOnce runs one group-commit cycle: it takes all pending work, writes records as
// batches (starting segments as they fill up, and for truncations and resets),
// fdatasyncs, and advances the durable index. It reports whether there was work.
func (w *WAL) flushOnce() bool {
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	w.mu.Lock()
	if w.failErr != nil || len(w.pending) == 0 {
		w.mu.Unlock()
		return false
	}
	ops := w.pending
	w.pending = nil
	target := w.tip.index
	w.takenIndex = target
	w.takeGen++
	w.inflight = true
	w.inflightCap = math.MaxUint64
	w.mu.Unlock()

	var placed []placement
	var err error
	for _, o := range ops {
		switch o.kind {
		case opRecords:
			placed, err = w.writeRecords(o.recs, placed)
		case opTruncate:
			err = w.startSegment(o.tip, 0)
		case opReset:
			err = w.startSegment(o.tip, flagBase)
		}
		if err != nil {
			break
		}
	}
	if err == nil {
		err = w.syncSegment(w.active)
	}
	if err != nil {
		w.fail(err)
		return true
	}
	w.stats.flushes.Add(1)
	w.publish(placed, target)
	return true
}

// writeRecords writes encoded records to the active segment, one batch per segment,
// starting a new segment when the next record does not fit. Called with ioMu held.
func (w *WAL) writeRecords(recs [][]byte, placed []placement) ([]placement, error) {
	for len(recs) > 0 {
		seg := w.active
		n, size := 0, int64(0)
		for n < len(recs) && size+int64(len(recs[n])) <= seg.room() {
			size += int64(len(recs[n]))
			n++
		}
		if n == 0 {
			assert(seg.writeOffset > int64(seg.hdr.blockBytes), "record of %d bytes does not fit an empty segment", len(recs[0]))
			if err := w.startSegment(w.diskTip, 0); err != nil {
				return placed, err
			}
			continue
		}
		// A batch goes out only after every earlier batch in the segment is synced: that
		// is what makes its header a sync boundary.
		if err := w.syncSegment(seg); err != nil {
			return placed, err
		}
		tip, p, err := w.writeBatch(seg, recs[:n], w.diskTip, placed)
		placed = p
		if err != nil {
			return placed, err
		}
		w.diskTip = tip
		recs = recs[n:]
	}
	return placed, nil
}

// publish records where the flushed records live, advances the durable index to what
// this cycle made durable, and wakes waiters. Placements and durability above
// inflightCap are void: a truncation after the work was taken removed those indexes.
func (w *WAL) publish(placed []placement, target uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	limit := min(target, w.inflightCap)
	for _, p := range placed {
		if p.index <= w.base.index || p.index > limit {
			continue
		}
		m := &w.metas[p.index-w.base.index-1]
		if m.checksum == p.checksum && m.seg == nil {
			m.seg, m.offset = p.seg, p.offset
		}
	}
	if limit > w.durableIndex.Load() {
		assert(limit <= w.tip.index, "durable index %d beyond last index %d", limit, w.tip.index)
		w.durableIndex.Store(limit)
	}
	w.publishGen++
	w.inflight = false
	w.stats.recordsSynced.Add(uint64(len(placed)))
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
		w.cacheBytes -= len(w.cache[0])
		w.cache[0] = nil
		w.cache = w.cache[1:]
		w.cacheFirst++
	}
}

// seal writes an empty batch after an unvouched last batch and fdatasyncs it, so that
// recovery can tell damage to that batch from a torn write. When the segment has no
// room, a new segment does the same job. Called with ioMu held.
func (w *WAL) seal() error {
	seg := w.active
	if seg == nil || !seg.unvouched {
		return nil
	}
	if err := w.syncSegment(seg); err != nil {
		return err
	}
	if seg.room() < 0 {
		return w.startSegment(w.diskTip, 0)
	}
	if _, _, err := w.writeBatch(seg, nil, w.diskTip, nil); err != nil {
		return err
	}
	return w.syncSegment(seg)
}

// sealIfNeeded seals under ioMu and fails the WAL if that fails.
func (w *WAL) sealIfNeeded() {
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	w.mu.Lock()
	failed := w.failErr != nil
	w.mu.Unlock()
	if failed {
		return
	}
	if err := w.seal(); err != nil {
		w.fail(err)
	}
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
	w.pending = nil
	w.inflight = false
	w.log.Error("wal: FAILED: a write or fdatasync failed; nothing past durable_index will ever be reported durable by this WAL; reopen it to recover from what is on disk",
		"err", err, "durable_index", w.durableIndex.Load(), "last_index", w.tip.index)
	w.notifyLocked()
}
