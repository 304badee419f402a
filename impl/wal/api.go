package wal

import (
	"fmt"
	"math"
)

// Append queues entries and returns at once; it performs no I/O. The caller assigns
// indexes and terms: entries[0].Index must be LastIndex()+1 and indexes must follow one
// by one; terms are positive and never decrease. Nothing is durable until the durable
// index covers it (Progress, WaitDurable, Notify). The entries' Data is copied. Like
// every submission it takes the next ticket: a SubmitSync after it returns a ticket
// that covers it.
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
	// One buffer for the batch's records (each record a capped slice of it), not one
	// allocation per record: the cache keeps the buffer until its last record leaves.
	total := 0
	for _, e := range entries {
		total += recordHeaderBytes + len(e.Data)
	}
	buf := make([]byte, 0, total)
	recs := make([][]byte, len(entries))
	sums := make([]uint32, len(entries))
	prev := w.tip.checksum
	for i, e := range entries {
		start := len(buf)
		buf, sums[i] = encodeRecord(buf, prev, e.Index, e.Term, e.Data)
		recs[i] = buf[start:len(buf):len(buf)]
		prev = sums[i]
	}
	w.appendLocked(recs, sums, func(i int) uint64 { return entries[i].Term })
	w.mu.Unlock()
	ring(w.wakeCh)
	return nil
}

// appendLocked adds encoded records that continue the tip (validated by the caller)
// to the log in memory and queues them for the pipeline.
func (w *WAL) appendLocked(recs [][]byte, sums []uint32, term func(int) uint64) {
	for i, rec := range recs {
		w.metas = append(w.metas, entryMeta{term: term(i), size: uint32(len(rec)), checksum: sums[i]})
		w.cacheBytes += len(rec)
	}
	w.cache.push(recs)
	n := len(recs)
	w.tip = chainTip{index: w.tip.index + uint64(n), term: term(n - 1), checksum: sums[n-1]}
	w.ticketLast++
	w.queueLocked(op{kind: opRecords, recs: recs})
	if uint64(len(w.metas)) != w.tip.index-w.base.index {
		violated("metas %d for indexes (%d, %d]", len(w.metas), w.base.index, w.tip.index)
	}
	if uint64(w.cache.len()) != w.tip.index+1-w.cacheFirst {
		violated("tail cache of %d records for indexes [%d, %d]", w.cache.len(), w.cacheFirst, w.tip.index)
	}
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

// queueLocked appends o to the pending work: records join a pending run of records,
// a hard state replaces a pending hard state it supersedes (keeping the earlier
// ticket: the op then carries both). o.ticket is w.ticketLast unless the caller set
// an earlier one (an op that took over dropped ones carries their first ticket). The
// caller rings wakeCh after unlocking mu.
func (w *WAL) queueLocked(o op) {
	if o.ticket == 0 {
		o.ticket = w.ticketLast
	}
	if len(w.pending) == 0 && !w.inflight {
		w.gatherFrom = w.clock.Now()
	}
	w.rung = true
	if n := len(w.pending); n > 0 {
		last := &w.pending[n-1]
		switch {
		case o.kind == opRecords && last.kind == opRecords:
			last.recs = append(last.recs, o.recs...)
			return
		case o.kind == opHardState && last.kind == opHardState:
			last.hs, last.lost = o.hs, o.lost
			last.ticket = min(last.ticket, o.ticket)
			return
		}
	}
	w.pending = append(w.pending, o)
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
// entries can reappear only if nothing submitted after the truncation was reported
// durable (a SubmitSync after it returns a ticket that covers it).
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
		w.cache.reset()
		w.cacheFirst, w.cacheBytes = from, 0
	} else {
		w.cacheBytes -= w.cache.keep(int(from - w.cacheFirst))
	}
	w.tip = newTip
	if d := w.durableIndex.Load(); d > newTip.index {
		w.durableIndex.Store(newTip.index)
		w.durableTerm = newTip.term
		w.log.Warn("wal: durable index clamped by suffix truncation", "from", d, "to", newTip.index)
	}
	w.capInflightLocked(newTip.index, newTip.term)
	w.markRemovedLocked(from)
	w.ticketLast++
	marker := from <= w.takenIndex
	first := w.trimPendingLocked(from, marker)
	if marker {
		// The new marker takes over the markers it dropped: their tickets are covered
		// only when it is durable.
		w.queueLocked(op{kind: opTruncate, tip: newTip, ticket: min(first, w.ticketLast)})
		w.takenIndex = newTip.index
	}
	w.settleLocked()
	w.notifyLocked()
	ring(w.wakeCh)
	return nil
}

// capInflightLocked lowers what the cycle in flight may report durable to index, whose
// term on disk is term.
func (w *WAL) capInflightLocked(index, term uint64) {
	if index < w.inflightCap {
		w.inflightCap, w.inflightCapTerm = index, term
	}
}

// trimPendingLocked drops pending records at or above from and, when a truncation
// marker is about to be queued, pending markers it supersedes; it returns the first
// ticket of the dropped markers (MaxUint64 if none). Dropped records never reached the
// pipeline, so nothing of them is on disk: their tickets need no successor.
func (w *WAL) trimPendingLocked(from uint64, marker bool) uint64 {
	first := uint64(math.MaxUint64)
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
				first = min(first, o.ticket)
				continue
			}
		}
		kept = append(kept, o)
	}
	clear(w.pending[len(kept):])
	w.pending = kept
	return first
}

// Reset discards the whole log and restarts it empty after (index, term), the last
// entry covered by a snapshot the caller has made durable (Raft InstallSnapshot). The
// compaction watermark becomes index and the next append is index+1. The durable index
// reaches index once the reset is on disk; until then it may sit below index (if it
// was above, it drops to index, with the term the old log has there). Like a
// truncation, the reset reaches the disk in order with later appends. Submitted hard
// states and compactions still pending are kept.
func (w *WAL) Reset(index, term uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.writableLocked(); err != nil {
		return err
	}
	if index < w.base.index {
		return fmt.Errorf("%w: reset to %d below the compaction watermark %d", ErrCompacted, index, w.base.index)
	}
	return w.resetLocked(index, term, chainSeed(index, term))
}

// ResetChain is Reset with the chain value at index given: the checksum of the record
// at index in the log the snapshot was taken from (its Checksum(index)), so that the
// records a peer ships after index chain to the restarted log (AppendRecords) exactly
// as they chain in the peer's. Unlike Reset it may go below the compaction watermark
// (a recovery that must throw a compacted log away, index 0 included: an empty log);
// index 0 takes term 0. A term of 0 with a positive index is ErrInvalid.
func (w *WAL) ResetChain(index, term uint64, checksum uint32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.writableLocked(); err != nil {
		return err
	}
	if (index == 0) != (term == 0) {
		return fmt.Errorf("%w: reset to %d at term %d", ErrInvalid, index, term)
	}
	return w.resetLocked(index, term, checksum)
}

func (w *WAL) resetLocked(index, term uint64, checksum uint32) error {
	oldTerm := term // the old log's term at index, where it has one
	switch {
	case index == w.base.index:
		oldTerm = w.base.term
	case index > w.base.index && index <= w.tip.index:
		oldTerm = w.metas[index-w.base.index-1].term
	}
	base := chainTip{index: index, term: term, checksum: checksum}
	w.markRemovedLocked(min(w.base.index, index) + 1)
	w.base, w.tip, w.metas = base, base, nil
	w.cache.reset()
	w.cacheFirst, w.cacheBytes = index+1, 0
	// The durable index reaches index only when the reset itself is on disk; until then
	// it may sit below the new watermark (a crash would bring the old log back).
	if w.durableIndex.Load() > index {
		w.durableIndex.Store(index)
		w.durableTerm = oldTerm
	}
	w.capInflightLocked(index, oldTerm)
	w.ticketLast++
	// The reset takes over the log work it drops: their tickets are covered only when
	// it is durable.
	first := w.ticketLast
	kept := w.pending[:0]
	for _, o := range w.pending {
		if o.kind == opHardState || o.kind == opRelease {
			kept = append(kept, o)
		} else {
			first = min(first, o.ticket)
		}
	}
	clear(w.pending[len(kept):])
	w.pending = kept
	w.queueLocked(op{kind: opReset, tip: base, ticket: first})
	w.takenIndex = index
	w.notifyLocked()
	ring(w.wakeCh)
	return nil
}

// SubmitCompact is the non-blocking form of CompactPrefix: the watermark moves at once
// (FirstIndex, Entries), the files are released by the pipeline, and the returned
// ticket is covered (Progress.Synced) once their release is durable.
func (w *WAL) SubmitCompact(throughIndex uint64) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.writableLocked(); err != nil {
		return 0, err
	}
	if d := w.durableIndex.Load(); throughIndex > d {
		return 0, fmt.Errorf("%w: compact through %d beyond the durable index %d", ErrOutOfRange, throughIndex, d)
	}
	k := 0
	for k+1 < len(w.segs) && w.segs[k+1].hdr.indexFirst-1 <= throughIndex && w.segs[k+1].hdr.indexFirst-1 > w.base.index {
		k++
	}
	w.ticketLast++
	if k == 0 {
		w.settleLocked()
		return w.ticketLast, nil
	}
	h := w.segs[k].hdr
	base := chainTip{index: h.indexFirst - 1, term: h.termPrev, checksum: h.checksumPrev}
	m := w.metas[base.index-w.base.index-1]
	assert(m.checksum == base.checksum && m.term == base.term, "segment %s starts after chain %08x term %d, log has %08x term %d at %d",
		w.segs[k].name, base.checksum, base.term, m.checksum, m.term, base.index)
	w.metas = append([]entryMeta(nil), w.metas[base.index-w.base.index:]...)
	if w.cacheFirst <= base.index {
		w.cacheBytes -= w.cache.dropFront(int(base.index + 1 - w.cacheFirst))
		w.cacheFirst = base.index + 1
	}
	w.base = base
	dropped := append([]*segment(nil), w.segs[:k]...)
	w.segs = append([]*segment(nil), w.segs[k:]...)
	w.detached = append(w.detached, dropped...)
	w.queueLocked(op{kind: opRelease, segs: dropped})
	ring(w.wakeCh)
	return w.ticketLast, nil
}

// ChainSeed is the chain value before the first record of a log that
// starts after (index, term) with nothing before it (Reset's): ResetChain
// to an empty log at 0 takes ChainSeed(0, 0).
func ChainSeed(index, term uint64) uint32 { return chainSeed(index, term) }
