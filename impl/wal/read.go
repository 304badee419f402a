package wal

import (
	"context"
	"fmt"
)

// FirstIndex returns the first index the log holds (the compaction watermark plus one).
func (w *WAL) FirstIndex() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.base.index + 1
}

// LastIndex returns the last appended index (durable or not).
func (w *WAL) LastIndex() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tip.index
}

// DurableIndex returns the durable watermark: every index up to it is fdatasync'd.
// A caller that needs the durable index together with its term (or with anything
// else) reads Progress: between DurableIndex and Term a truncation and an append can
// put an entry that is not durable at the same index.
func (w *WAL) DurableIndex() uint64 { return w.durableIndex.Load() }

// DurableNotify is Notify (the same channel): closed at the next change of the
// Progress, which includes every advance of the durable index.
func (w *WAL) DurableNotify() <-chan struct{} { return w.Notify() }

// Term returns the term of the entry at index; at FirstIndex()-1 it returns the term
// of the compaction watermark. It is the term in memory, durable or not: for the term
// of the durable index read Progress.
func (w *WAL) Term(index uint64) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case index < w.base.index:
		return 0, fmt.Errorf("%w: term of %d below the compaction watermark %d", ErrCompacted, index, w.base.index)
	case index > w.tip.index:
		return 0, fmt.Errorf("%w: term of %d beyond last index %d", ErrOutOfRange, index, w.tip.index)
	case index == w.base.index:
		return w.base.term, nil
	}
	return w.metas[index-w.base.index-1].term, nil
}

// WaitDurable waits until the entry now at index is durable. It returns ErrTruncated if
// that entry is removed first (TruncateSuffix, Reset), the failure error if the WAL
// fails, ErrClosed, or the context's error. An index at or below the compaction
// watermark is durable by construction (compaction never passes the durable index).
// In stepped mode it does not perform steps: another goroutine must (a caller that
// drives the steps itself watches Progress instead).
func (w *WAL) WaitDurable(ctx context.Context, index uint64) error {
	if w.durableIndex.Load() >= index {
		return nil // durable <= last index always, so this is the entry now at index
	}
	w.mu.Lock()
	if index <= w.base.index {
		w.mu.Unlock()
		return nil
	}
	if index > w.tip.index {
		w.mu.Unlock()
		return fmt.Errorf("%w: wait for %d beyond last index %d", ErrOutOfRange, index, w.tip.index)
	}
	wt := &waiter{index: index}
	w.waiters[wt] = struct{}{}
	defer func() {
		w.mu.Lock()
		delete(w.waiters, wt)
		w.mu.Unlock()
	}()
	for {
		var err error
		switch {
		case wt.removed:
			err = fmt.Errorf("%w: entry %d was removed while waiting for it", ErrTruncated, index)
		case index <= w.base.index || w.durableIndex.Load() >= index:
			w.mu.Unlock()
			return nil
		case w.failErr != nil:
			err = w.failErr
		case w.closing:
			err = ErrClosed
		}
		ch := w.durableCh
		w.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock()
	}
}

// waiter is a WaitDurable in progress; TruncateSuffix and Reset mark the ones whose
// entry they remove.
type waiter struct {
	index   uint64
	removed bool
}

// markRemovedLocked marks the waiters for indexes at or above from.
func (w *WAL) markRemovedLocked(from uint64) {
	for wt := range w.waiters {
		if wt.index >= from {
			wt.removed = true
		}
	}
}

// readItem is one entry of a read plan; readPlan fills in rec and entry.
type readItem struct {
	index        uint64
	meta         entryMeta
	checksumPrev uint32
	// rec is the cached record (set by the plan; cached then), or nil: read it from
	// meta.seg, and then the verified bytes read. entry is decoded from rec (Data
	// aliases rec).
	rec    []byte
	cached bool
	entry  Entry
}

// Entries returns the entries with indexes in [lo, hi), from the tail cache or straight
// from the segments, each verified (checksum, index, term and hash chain against what
// the WAL holds in memory) before it is returned; a record that fails verification after
// ReadRetries re-reads is never served: Entries returns ErrCorrupt, and if the record
// lies inside the durable prefix the WAL fails (loudly; Err wraps ErrFailed and
// ErrCorrupt), so that the owner reopens it and recovery rules on the damage. Reads of
// other entries keep working on the failed WAL. The result holds at
// least one entry when lo < hi, and then stops before the total record size would pass
// maxBytes. It serves every appended entry, durable or not: to serve only the durable
// log (catch-up), bound hi by Progress().DurableIndex+1.
func (w *WAL) Entries(lo, hi, maxBytes uint64) ([]Entry, error) {
	got, err := w.read(lo, hi, maxBytes)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(got))
	for i := range got {
		out[i] = got[i].entry
		if got[i].cached {
			out[i].Data = append([]byte(nil), got[i].entry.Data...) // the cache is never handed out
		}
	}
	return out, nil
}

// read plans and performs a verified read of [lo, hi): see Entries. The plan it
// returns holds each record and its entry.
func (w *WAL) read(lo, hi, maxBytes uint64) ([]readItem, error) {
	w.mu.Lock()
	switch {
	case w.closing:
		w.mu.Unlock()
		return nil, ErrClosed
	case lo > hi:
		w.mu.Unlock()
		return nil, fmt.Errorf("%w: range [%d, %d) has lo > hi", ErrOutOfRange, lo, hi)
	case lo <= w.base.index:
		w.mu.Unlock()
		return nil, fmt.Errorf("%w: range [%d, %d) starts at or below the compaction watermark %d", ErrCompacted, lo, hi, w.base.index)
	case hi > w.tip.index+1:
		w.mu.Unlock()
		return nil, fmt.Errorf("%w: range [%d, %d) beyond last index %d", ErrOutOfRange, lo, hi, w.tip.index)
	case lo == hi:
		w.mu.Unlock()
		return nil, nil
	}
	prev := w.base.checksum
	if lo-1 > w.base.index {
		prev = w.metas[lo-1-w.base.index-1].checksum
	}
	plan := make([]readItem, 0, min(hi-lo, 256))
	var total uint64
	for i := lo; i < hi; i++ {
		m := w.metas[i-w.base.index-1]
		if len(plan) > 0 && total+uint64(m.size) > maxBytes {
			break
		}
		total += uint64(m.size)
		it := readItem{index: i, meta: m, checksumPrev: prev}
		if i >= w.cacheFirst {
			it.rec, it.cached = w.cache.at(int(i-w.cacheFirst)), true
		}
		if it.rec == nil && m.seg == nil {
			violated("entry %d neither cached nor on disk", i)
		}
		plan = append(plan, it)
		prev = m.checksum
	}
	w.filesMu.RLock()
	w.mu.Unlock()
	bad, err := w.readPlan(plan)
	w.filesMu.RUnlock() // before corruptRead: fail takes mu (lock order)
	if err != nil {
		return nil, w.corruptRead(bad, err)
	}
	return plan, nil
}

// readPlan reads and verifies the plan's records in place (rec, entry), one ReadAt
// per run of records that are contiguous in one segment. On failure it returns the
// item that failed.
func (w *WAL) readPlan(plan []readItem) (readItem, error) {
	for i := 0; i < len(plan); {
		if plan[i].cached {
			e, err := verifyItem(plan[i].rec, plan[i])
			if err != nil {
				return plan[i], fmt.Errorf("in the tail cache: %w", err)
			}
			plan[i].entry = e
			i++
			continue
		}
		j := i + 1
		for j < len(plan) && !plan[j].cached && plan[j].meta.seg == plan[i].meta.seg &&
			plan[j].meta.offset == plan[j-1].meta.offset+int64(plan[j-1].meta.size) {
			j++
		}
		if bad, err := w.readRun(plan[i:j]); err != nil {
			return bad, err
		}
		i = j
	}
	return readItem{}, nil
}

// readRun reads a contiguous run of records, re-reading it while it fails verification.
func (w *WAL) readRun(run []readItem) (readItem, error) {
	first, last := run[0].meta, run[len(run)-1].meta
	size := last.offset + int64(last.size) - first.offset
	var failed readItem
	var lastErr error
	for attempt := 0; attempt <= w.opts.ReadRetries; attempt++ {
		buf := make([]byte, size)
		if _, err := first.seg.file.ReadAt(buf, first.offset); err != nil {
			lastErr, failed = fmt.Errorf("read: %w", err), run[0]
			continue
		}
		lastErr = nil
		for k := range run {
			it := &run[k]
			off := it.meta.offset - first.offset
			rec := buf[off : off+int64(it.meta.size) : off+int64(it.meta.size)]
			e, err := verifyItem(rec, *it)
			if err != nil {
				lastErr, failed = err, *it
				break
			}
			it.rec, it.entry = rec, e
		}
		if lastErr == nil {
			if attempt > 0 {
				w.log.Warn("wal: read failed verification, then a re-read succeeded (transient)", "segment", first.seg.name,
					"offset", first.offset, "attempts", attempt+1)
			}
			return readItem{}, nil
		}
	}
	return failed, fmt.Errorf("in %s: %w", first.seg.name, lastErr)
}

// verifyItem checks a record against what the WAL holds in memory for it.
func verifyItem(b []byte, it readItem) (Entry, error) {
	r, n, err := decodeRecord(b, len(b))
	switch {
	case err != nil:
		return Entry{}, err
	case n != len(b):
		return Entry{}, fmt.Errorf("%w: record is %d bytes, expected %d", ErrCorrupt, n, len(b))
	case r.index != it.index || r.term != it.meta.term || r.checksum != it.meta.checksum:
		return Entry{}, fmt.Errorf("%w: record index %d term %d checksum %08x, expected %d %d %08x",
			ErrCorrupt, r.index, r.term, r.checksum, it.index, it.meta.term, it.meta.checksum)
	case r.checksumPrev != it.checksumPrev:
		return Entry{}, fmt.Errorf("%w: record %d chains to %08x, previous is %08x", ErrCorrupt, r.index, r.checksumPrev, it.checksumPrev)
	}
	return Entry{Index: r.index, Term: r.term, Data: r.data}, nil
}

// corruptRead reports a record that failed verification after every re-read: never
// served, logged loudly. Inside the durable prefix it fails the WAL: the log holds
// damage that recovery must rule on (it will say TRUNCATED), so the owner restarts
// instead of serving around the hole. Called without mu and filesMu.
func (w *WAL) corruptRead(it readItem, err error) error {
	w.log.Error("wal: CORRUPT record on read; not served", "index", it.index, "offset", it.meta.offset, "err", err)
	err = fmt.Errorf("%w: entry %d at offset %d: %w", ErrCorrupt, it.index, it.meta.offset, err)
	if it.index <= w.durableIndex.Load() && w.opts.bugs&bugCorruptReadNotFatal == 0 {
		w.fail(fmt.Errorf("damage found by a read inside the durable prefix (reopen: recovery rules on it): %w", err))
	}
	return err
}
