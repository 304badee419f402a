package wal

import (
	"context"
)

// Progress is one consistent snapshot of what the WAL has made durable, taken under
// its lock.
type Progress struct {
	// DurableIndex: every entry up to it is fdatasync'd. DurableTerm is the term of the
	// entry there on disk (at the compaction watermark, the base's term; 0 for an empty
	// log). Between a Reset and its flush DurableIndex may lie below the new watermark:
	// it then describes the old log, which a crash would bring back.
	DurableIndex uint64
	DurableTerm  uint64
	// Synced: every submission whose ticket is at most Synced is durable on disk, or
	// was superseded (records truncated before they reached the disk, a hard state
	// replaced by a later one).
	Synced uint64
	// HardState is the last hard state made durable (or recovered).
	HardState HardState
	// Err is non-nil once the WAL failed (it wraps ErrFailed); nothing advances after.
	Err error
}

// Progress returns what is durable now. Read the durable index and its term here, not
// with DurableIndex and Term: between two calls a truncation and an append can put an
// undurable entry at the durable index.
func (w *WAL) Progress() Progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Progress{
		DurableIndex: w.durableIndex.Load(),
		DurableTerm:  w.durableTerm,
		Synced:       w.synced,
		HardState:    w.hsDurable.state,
		Err:          w.failErr,
	}
}

// Notify returns a channel that is closed (and replaced) at the next change of the
// Progress: the durable index, Synced, the hard state, a failure; also at a
// truncation, a reset and Close. Take the channel, then read Progress, and no change
// can be missed.
func (w *WAL) Notify() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.durableCh
}

// settleLocked advances synced over submissions that need no I/O of their own (a
// SubmitSync, a hard state equal to the last one, a compaction with nothing to drop,
// records truncated before they were taken): with no cycle in flight, every ticket
// below the first one a pending op carries is durable. (Pending ops are in submission
// order, but an op that took over dropped ones carries their earlier ticket.) It
// reports whether synced moved; the caller notifies.
func (w *WAL) settleLocked() bool {
	if w.inflight || w.failErr != nil {
		return false
	}
	s := w.ticketLast
	for _, o := range w.pending {
		s = min(s, o.ticket-1)
	}
	if s <= w.synced {
		return false
	}
	w.synced = s
	return true
}

// SubmitSync returns a ticket covering everything submitted before it (appends,
// truncations, resets, hard states, compactions) and asks the pipeline to skip
// SyncDelay for the work pending now. It does not block. On a failed or closed WAL the
// ticket is never covered (Progress.Err says why).
func (w *WAL) SubmitSync() uint64 {
	w.mu.Lock()
	w.ticketLast++
	t := w.ticketLast
	if len(w.pending) > 0 {
		w.hurry = true
	}
	if w.settleLocked() {
		w.notifyLocked()
	}
	w.mu.Unlock()
	ring(w.wakeCh)
	return t
}

// Sync waits until everything submitted before the call is on disk, skipping
// SyncDelay. In stepped mode it performs the steps itself.
func (w *WAL) Sync(ctx context.Context) error {
	if err := w.writable(); err != nil {
		return err
	}
	return w.await(ctx, w.SubmitSync())
}

// await waits until Progress.Synced covers ticket. In stepped mode it first drives the
// steps itself (the caller may also drive them from another goroutine).
func (w *WAL) await(ctx context.Context, ticket uint64) error {
	for {
		if w.opts.Stepped {
			w.drive(func() bool { return w.Progress().Synced >= ticket })
		}
		w.mu.Lock()
		done, err, ch := w.synced >= ticket, w.failErr, w.durableCh
		if !done && err == nil && w.closing {
			err = ErrClosed
		}
		w.mu.Unlock()
		if done {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// SubmitHardState queues hs to be made durable (two fdatasyncs, see docs/wal.md) in
// order with the log work submitted before it, and returns its ticket at once. It
// refuses at once (ErrInvalid) a term going backwards or a vote changed within a term,
// judged against the last hard state submitted. A hard state equal to the last one
// queues nothing. Progress().HardState shows it once it is durable; log work
// submitted after it reaches the disk only after it is recoverable.
func (w *WAL) SubmitHardState(hs HardState) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.writableLocked(); err != nil {
		return 0, err
	}
	prev := w.hsSubmitted
	if hs != prev {
		if err := validateHardState(prev, hs); err != nil {
			return 0, err
		}
	}
	w.ticketLast++
	if hs == prev {
		if w.settleLocked() {
			w.notifyLocked()
		}
		return w.ticketLast, nil
	}
	w.hsSubmitted = hs
	w.queueLocked(op{kind: opHardState, hs: hs, lost: w.lostSubmitted})
	ring(w.wakeCh)
	return w.ticketLast, nil
}

// SetHardState makes hs durable and returns after it is (SubmitHardState, then wait).
// A failed write puts the WAL in the failed state.
func (w *WAL) SetHardState(hs HardState) error {
	t, err := w.SubmitHardState(hs)
	if err != nil {
		return err
	}
	w.SubmitSync()
	return w.await(context.Background(), t)
}

// ClearHardStateLoss clears the sticky mark an Open left when it found the hard state
// lost or damaged (rows H2, H6, H7; every later Open says H8 until this call). It is an
// operator's decision, not the protocol's: a member that lost its term or vote may
// have voted in a term it no longer knows, and could vote twice in it. Durable on
// return; a no-op when there is no mark.
func (w *WAL) ClearHardStateLoss() error {
	w.mu.Lock()
	if err := w.writableLocked(); err != nil {
		w.mu.Unlock()
		return err
	}
	if !w.lostSubmitted {
		w.mu.Unlock()
		return w.Sync(context.Background()) // a clear may still be in flight
	}
	w.lostSubmitted = false
	w.ticketLast++
	t := w.ticketLast
	w.queueLocked(op{kind: opHardState, hs: w.hsSubmitted, lost: false})
	hs := w.hsSubmitted
	w.mu.Unlock()
	ring(w.wakeCh)
	w.SubmitSync()
	if err := w.await(context.Background(), t); err != nil {
		return err
	}
	w.log.Warn("wal: hard-state loss mark cleared by the operator", "term", hs.Term, "vote", hs.Vote)
	return nil
}

// HardStateLost reports whether the durable hard state carries the loss mark (see
// ClearHardStateLoss).
func (w *WAL) HardStateLost() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hsDurable.lost
}

// HardState returns the last hard state made durable (or recovered).
func (w *WAL) HardState() HardState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hsDurable.state
}

// CompactPrefix drops whole segments whose entries all lie at or below throughIndex
// (a snapshot watermark); throughIndex must not exceed the durable index. The active
// segment is never dropped, so FirstIndex() may stay below throughIndex+1. It returns
// once the release is durable (SubmitCompact, then wait).
func (w *WAL) CompactPrefix(throughIndex uint64) error {
	t, err := w.SubmitCompact(throughIndex)
	if err != nil {
		return err
	}
	w.SubmitSync()
	return w.await(context.Background(), t)
}

// Err returns the error that failed the WAL (wrapping ErrFailed), or nil.
func (w *WAL) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failErr
}

// Failed reports whether the WAL is in the failed state.
func (w *WAL) Failed() bool { return w.Err() != nil }

// Close flushes what is pending, seals the log, stops the goroutines (in stepped mode:
// performs the remaining steps itself) and closes the files. It returns the failure
// error if the WAL failed.
func (w *WAL) Close() error {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return ErrClosed
	}
	w.closing = true
	w.mu.Unlock()
	close(w.closeCh)
	if w.opts.Stepped {
		w.drive(func() bool { return false })
	}
	<-w.doneCh
	<-w.prepDone
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	w.mu.Lock()
	w.closed = true
	err := w.failErr
	segs := append(append([]*segment(nil), w.segs...), w.detached...)
	w.notifyLocked()
	w.mu.Unlock()
	w.filesMu.Lock()
	for _, s := range segs {
		_ = s.file.Close()
	}
	w.filesMu.Unlock()
	_ = w.hs.file.Close()
	_ = w.dirLock.Close()
	return err
}
