package wal

import (
	"context"
	"fmt"
)

// Append queues entries and returns at once; it performs no I/O. The caller assigns
// indexes and terms: entries[0].Index must be LastIndex()+1 and indexes must follow one
// by one; terms are positive and never decrease. Nothing is durable until
// DurableIndex() covers it (WaitDurable, DurableNotify). The entries' Data is copied.
func (w *WAL) Append(entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	w.mu.Lock()
	if err := w.writableLocked(); err != nil {
		w.mu.Unlock()
		return err
	}
	if err := w.validateAppendLocked(entries); err != nil {
		w.mu.Unlock()
		return err
	}
	recs := make([][]byte, len(entries))
	tip := w.tip
	for i, e := range entries {
		rec, sum := encodeRecord(make([]byte, 0, recordHeaderBytes+len(e.Data)), tip.checksum, e.Index, e.Term, e.Data)
		recs[i] = rec
		w.metas = append(w.metas, entryMeta{term: e.Term, size: uint32(len(rec)), checksum: sum})
		w.cacheBytes += len(rec)
		tip = chainTip{index: e.Index, term: e.Term, checksum: sum}
	}
	w.cache = append(w.cache, recs...)
	w.tip = tip
	if n := len(w.pending); n > 0 && w.pending[n-1].kind == opRecords {
		w.pending[n-1].recs = append(w.pending[n-1].recs, recs...)
	} else {
		w.pending = append(w.pending, op{kind: opRecords, recs: recs})
	}
	assert(uint64(len(w.metas)) == w.tip.index-w.base.index, "metas %d for indexes (%d, %d]", len(w.metas), w.base.index, w.tip.index)
	w.mu.Unlock()
	ring(w.wakeCh)
	return nil
}

func (w *WAL) validateAppendLocked(entries []Entry) error {
	term := w.tip.term
	for i, e := range entries {
		if want := w.tip.index + 1 + uint64(i); e.Index != want {
			return fmt.Errorf("%w: entry %d of the append has index %d, want %d", ErrNonContiguous, i, e.Index, want)
		}
		if e.Term == 0 || e.Term < term {
			return fmt.Errorf("%w: entry %d has term %d after term %d (terms are positive and never decrease)", ErrInvalid, e.Index, e.Term, term)
		}
		if len(e.Data) > w.opts.EntryBytesMax {
			return fmt.Errorf("%w: entry %d has %d bytes, maximum %d", ErrInvalid, e.Index, len(e.Data), w.opts.EntryBytesMax)
		}
		term = e.Term
	}
	return nil
}

// writable is writableLocked taking mu.
func (w *WAL) writable() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writableLocked()
}

// writableLocked returns why the WAL accepts no writes, or nil.
func (w *WAL) writableLocked() error {
	if w.failErr != nil {
		return w.failErr
	}
	if w.closing {
		return ErrClosed
	}
	return nil
}

// TruncateSuffix removes the entries from index from on (a Raft log conflict). It does
// not touch the compaction watermark. The durable index is clamped to from-1 at once.
// On disk the truncation takes effect in order with appends: entries appended after it
// become durable only after the truncation itself is durable, so after a crash removed
// entries can reappear only if nothing appended after the truncation was reported
// durable.
func (w *WAL) TruncateSuffix(from uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.writableLocked(); err != nil {
		return err
	}
	switch {
	case from <= w.base.index:
		return fmt.Errorf("%w: truncate from %d at or below the compaction watermark %d", ErrCompacted, from, w.base.index)
	case from > w.tip.index+1:
		return fmt.Errorf("%w: truncate from %d beyond last index %d", ErrOutOfRange, from, w.tip.index)
	case from == w.tip.index+1:
		return nil
	}
	keep := from - w.base.index - 1
	newTip := w.base
	if keep > 0 {
		m := w.metas[keep-1]
		newTip = chainTip{index: from - 1, term: m.term, checksum: m.checksum}
	}
	w.metas = w.metas[:keep]
	if from < w.cacheFirst {
		w.cache, w.cacheFirst = nil, from
	} else {
		w.cache = w.cache[:from-w.cacheFirst]
	}
	w.cacheBytes = 0
	for _, r := range w.cache {
		w.cacheBytes += len(r)
	}
	w.tip = newTip
	if d := w.durableIndex.Load(); d > newTip.index {
		w.durableIndex.Store(newTip.index)
		w.log.Warn("wal: durable index clamped by suffix truncation", "from", d, "to", newTip.index)
	}
	w.inflightCap = min(w.inflightCap, newTip.index)
	w.markRemovedLocked(from)
	marker := from <= w.takenIndex
	w.trimPendingLocked(from, marker)
	if marker {
		w.pending = append(w.pending, op{kind: opTruncate, tip: newTip})
		w.takenIndex = newTip.index
	}
	w.notifyLocked()
	ring(w.wakeCh)
	return nil
}

// trimPendingLocked drops pending records at or above from and, when a truncation
// marker is about to be queued, pending markers it supersedes.
func (w *WAL) trimPendingLocked(from uint64, marker bool) {
	kept := w.pending[:0]
	for _, o := range w.pending {
		switch o.kind {
		case opRecords:
			n := 0
			for n < len(o.recs) && le.Uint64(o.recs[n][8:]) < from {
				n++
			}
			if n == 0 {
				continue
			}
			o.recs = o.recs[:n]
		case opTruncate:
			if marker && o.tip.index+1 >= from {
				continue
			}
		}
		kept = append(kept, o)
	}
	clear(w.pending[len(kept):])
	w.pending = kept
}

// Reset discards the whole log and restarts it empty after (index, term), the last
// entry covered by a snapshot the caller has made durable (Raft InstallSnapshot). The
// compaction watermark becomes index and the next append is index+1. The durable index
// reaches index once the reset is on disk; like a truncation, the reset reaches the disk
// in order with later appends.
func (w *WAL) Reset(index, term uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.writableLocked(); err != nil {
		return err
	}
	if index < w.base.index {
		return fmt.Errorf("%w: reset to %d below the compaction watermark %d", ErrCompacted, index, w.base.index)
	}
	base := chainTip{index: index, term: term, checksum: chainSeed(index, term)}
	w.markRemovedLocked(w.base.index + 1)
	w.base, w.tip, w.metas = base, base, nil
	w.cache, w.cacheFirst, w.cacheBytes = nil, index+1, 0
	// The durable index reaches index only when the reset itself is on disk; until then
	// it may sit below the new watermark (a crash would bring the old log back).
	w.durableIndex.Store(min(w.durableIndex.Load(), index))
	w.inflightCap = min(w.inflightCap, index)
	w.pending = []op{{kind: opReset, tip: base}}
	w.takenIndex = index
	w.notifyLocked()
	ring(w.wakeCh)
	return nil
}

// CompactPrefix drops whole segments whose entries all lie at or below throughIndex
// (a snapshot watermark); throughIndex must not exceed the durable index. The active
// segment is never dropped, so FirstIndex() may stay below throughIndex+1. It waits for
// a flush in progress.
func (w *WAL) CompactPrefix(throughIndex uint64) error {
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	w.mu.Lock()
	if err := w.writableLocked(); err != nil {
		w.mu.Unlock()
		return err
	}
	if d := w.durableIndex.Load(); throughIndex > d {
		w.mu.Unlock()
		return fmt.Errorf("%w: compact through %d beyond the durable index %d", ErrOutOfRange, throughIndex, d)
	}
	k := 0
	for k+1 < len(w.segs) && w.segs[k+1].hdr.indexFirst-1 <= throughIndex && w.segs[k+1].hdr.indexFirst-1 > w.base.index {
		k++
	}
	if k == 0 {
		w.mu.Unlock()
		return nil
	}
	h := w.segs[k].hdr
	base := chainTip{index: h.indexFirst - 1, term: h.termPrev, checksum: h.checksumPrev}
	m := w.metas[base.index-w.base.index-1]
	assert(m.checksum == base.checksum && m.term == base.term, "segment %s starts after chain %08x term %d, log has %08x term %d at %d",
		w.segs[k].name, base.checksum, base.term, m.checksum, m.term, base.index)
	w.metas = append([]entryMeta(nil), w.metas[base.index-w.base.index:]...)
	if w.cacheFirst <= base.index {
		n := base.index + 1 - w.cacheFirst
		for _, r := range w.cache[:n] {
			w.cacheBytes -= len(r)
		}
		w.cache, w.cacheFirst = w.cache[n:], base.index+1
	}
	w.base = base
	dropped := append([]*segment(nil), w.segs[:k]...)
	w.segs = append([]*segment(nil), w.segs[k:]...)
	w.mu.Unlock()
	return w.releaseSegments(dropped, true)
}

// SetHardState makes hs durable (two fdatasyncs, see docs/wal.md) and returns after it
// is. It refuses a term going backwards or a vote changed within a term. A failed write
// puts the WAL in the failed state.
func (w *WAL) SetHardState(hs HardState) error {
	w.hsMu.Lock()
	defer w.hsMu.Unlock()
	if err := w.writable(); err != nil {
		return err
	}
	prev := w.hs.last.state
	if hs == prev {
		return nil
	}
	if err := validateHardState(prev, hs); err != nil {
		return err
	}
	return w.storeHardStateLocked(hs, w.hs.last.lost)
}

// storeHardStateLocked makes the state and loss mark durable; a failed write fails
// the WAL. Called with hsMu held, after writable.
func (w *WAL) storeHardStateLocked(hs HardState, lost bool) error {
	if err := w.hs.store(hs, lost); err != nil {
		w.fail(err)
		return w.Err()
	}
	return nil
}

// ClearHardStateLoss clears the sticky mark an Open left when it found the hard state
// lost or damaged (rows H2, H6, H7; every later Open says H8 until this call). It is an
// operator's decision, not the protocol's: a member that lost its term or vote may
// have voted in a term it no longer knows, and could vote twice in it. Durable on
// return; a no-op when there is no mark.
func (w *WAL) ClearHardStateLoss() error {
	w.hsMu.Lock()
	defer w.hsMu.Unlock()
	if err := w.writable(); err != nil {
		return err
	}
	if !w.hs.last.lost {
		return nil
	}
	if err := w.storeHardStateLocked(w.hs.last.state, false); err != nil {
		return err
	}
	w.log.Warn("wal: hard-state loss mark cleared by the operator", "term", w.hs.last.state.Term, "vote", w.hs.last.state.Vote)
	return nil
}

// HardStateLost reports whether the hard state carries the loss mark (see
// ClearHardStateLoss).
func (w *WAL) HardStateLost() bool {
	w.hsMu.Lock()
	defer w.hsMu.Unlock()
	return w.hs.last.lost
}

// HardState returns the last hard state made durable (or recovered).
func (w *WAL) HardState() HardState {
	w.hsMu.Lock()
	defer w.hsMu.Unlock()
	return w.hs.last.state
}

// Err returns the error that failed the WAL (wrapping ErrFailed), or nil.
func (w *WAL) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failErr
}

// Failed reports whether the WAL is in the failed state.
func (w *WAL) Failed() bool { return w.Err() != nil }

// Sync waits until everything submitted before the call (appends, truncations, resets)
// is on disk, asking the flusher to skip its SyncDelay.
func (w *WAL) Sync(ctx context.Context) error {
	w.mu.Lock()
	// Work pending now is taken whole by the next take; work in flight by the current.
	target := w.takeGen
	if len(w.pending) > 0 {
		target++
	}
	w.mu.Unlock()
	for {
		if w.opts.manualFlush {
			w.flushOnce()
		}
		w.mu.Lock()
		idle := len(w.pending) == 0 && !w.inflight
		done, err, ch := w.publishGen >= target || idle, w.failErr, w.durableCh
		if !done && err == nil && w.closing {
			err = ErrClosed
		}
		w.mu.Unlock()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		ring(w.hurryCh)
		ring(w.wakeCh)
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close flushes what is pending, seals the log, stops the flusher and closes the
// files. It returns the failure error if the WAL failed.
func (w *WAL) Close() error {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return ErrClosed
	}
	w.closing = true
	w.mu.Unlock()
	close(w.closeCh)
	if w.opts.manualFlush {
		for w.flushOnce() {
		}
		w.sealIfNeeded()
	}
	<-w.doneCh
	<-w.prepDone
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	w.mu.Lock()
	err := w.failErr
	segs := w.segs
	w.notifyLocked()
	w.mu.Unlock()
	w.filesMu.Lock()
	for _, s := range segs {
		_ = s.file.Close()
	}
	w.filesMu.Unlock()
	w.hsMu.Lock()
	_ = w.hs.file.Close()
	w.hsMu.Unlock()
	_ = w.dirLock.Close()
	return err
}
