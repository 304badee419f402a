package wal

import (
	"fmt"
)

// Record is one framed log entry: the record format of docs/wal.md ("Record"), a
// checksum over the entry and the checksum of the record before it (the hash chain).
// A record's bytes do not depend on where it is stored: the bytes in the leader's
// WAL are the bytes on the wire and on a follower's disk (verified shipping: Records
// on one side, AppendRecords on the other). A Record handed out by the WAL must not
// be modified.
type Record []byte

// EncodeRecord frames e after a record whose checksum is checksumPrev and returns the
// record and its own checksum (the next record's checksumPrev). e.Index and e.Term
// must be positive, or Decode refuses the record.
func EncodeRecord(checksumPrev uint32, e Entry) (Record, uint32) {
	rec, sum := encodeRecord(make([]byte, 0, recordHeaderBytes+len(e.Data)), checksumPrev, e.Index, e.Term, e.Data)
	return Record(rec), sum
}

// Decode verifies r (its checksum, kind, reserved bytes, positive index and term, a
// payload of at most entryBytesMax bytes, and that it is exactly len(r) bytes) and
// returns its entry (Data aliases r), its checksum and the checksum it chains to. It
// does not check where the record belongs in a log: AppendRecords does. Errors wrap
// ErrCorrupt.
func (r Record) Decode(entryBytesMax int) (e Entry, checksum, checksumPrev uint32, err error) {
	d, n, err := decodeRecord(r, entryBytesMax)
	switch {
	case err != nil:
		return Entry{}, 0, 0, err
	case n != len(r):
		return Entry{}, 0, 0, fmt.Errorf("%w: record of %d bytes followed by %d more", ErrCorrupt, n, len(r)-n)
	}
	return Entry{Index: d.index, Term: d.term, Data: d.data}, d.checksum, d.checksumPrev, nil
}

// Records is Entries returning the stored record bytes instead of decoded entries:
// the same range rules, byte bound, verification and errors. The records alias the
// WAL's tail cache or a fresh read buffer; they are never modified by the WAL, and
// must not be modified by the caller.
func (w *WAL) Records(lo, hi, maxBytes uint64) ([]Record, error) {
	got, err := w.read(lo, hi, maxBytes)
	if err != nil {
		return nil, err
	}
	out := make([]Record, len(got))
	for i := range got {
		rec := got[i].rec
		out[i] = Record(rec[:len(rec):len(rec)])
	}
	return out, nil
}

// AppendRecords appends records received from a peer, byte for byte: on disk they are
// identical to the sender's. Each record must decode (ErrCorrupt), carry a payload of
// at most EntryBytesMax (ErrInvalid), and continue the log: indexes follow the last
// index one by one, terms never decrease, the first record chains to the checksum of
// the last index (Checksum(LastIndex())) and each next one to the record before it
// (ErrChain; an index that does not follow also wraps ErrNonContiguous, a term going
// back ErrInvalid). On any failure nothing is appended. Like Append it queues the
// records and returns at once. The bytes are copied.
func (w *WAL) AppendRecords(recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	decoded := make([]record, len(recs))
	total := 0
	for i, r := range recs {
		d, n, err := decodeRecord(r, len(r))
		if err == nil && n != len(r) {
			err = fmt.Errorf("%w: record of %d bytes followed by %d more", ErrCorrupt, n, len(r)-n)
		}
		if err != nil {
			return fmt.Errorf("record %d of %d: %w", i+1, len(recs), err)
		}
		if len(d.data) > w.opts.EntryBytesMax {
			return fmt.Errorf("%w: record %d (index %d) has %d bytes, maximum %d", ErrInvalid, i+1, d.index, len(d.data), w.opts.EntryBytesMax)
		}
		decoded[i] = d
		total += n
	}
	buf := make([]byte, 0, total)
	stored := make([][]byte, len(recs))
	sums := make([]uint32, len(recs))
	for i, r := range recs {
		start := len(buf)
		buf = append(buf, r...)
		stored[i] = buf[start:len(buf):len(buf)]
		sums[i] = decoded[i].checksum
	}
	w.mu.Lock()
	if err := w.writableLocked(); err != nil {
		w.mu.Unlock()
		return err
	}
	if err := w.chainsLocked(decoded); err != nil {
		w.mu.Unlock()
		return err
	}
	w.appendLocked(stored, sums, func(i int) uint64 { return decoded[i].term })
	w.mu.Unlock()
	ring(w.wakeCh)
	return nil
}

// chainsLocked checks that decoded records continue the log at its tip.
func (w *WAL) chainsLocked(decoded []record) error {
	tip := w.tip
	for i, d := range decoded {
		switch {
		case d.index != tip.index+1:
			return fmt.Errorf("%w: %w: record %d has index %d, want %d", ErrChain, ErrNonContiguous, i+1, d.index, tip.index+1)
		case d.term < tip.term:
			return fmt.Errorf("%w: %w: record %d (index %d) has term %d after term %d", ErrChain, ErrInvalid, i+1, d.index, d.term, tip.term)
		case d.checksumPrev != tip.checksum:
			return fmt.Errorf("%w: record %d (index %d) chains to %08x, the log has %08x at %d", ErrChain, i+1, d.index, d.checksumPrev, tip.checksum, tip.index)
		}
		tip = chainTip{index: d.index, term: d.term, checksum: d.checksum}
	}
	return nil
}

// Checksum returns the chain value at index (the checksum of the record there; at the
// compaction watermark, the base's chain value), for FirstIndex()-1 <= index <=
// LastIndex(): what a record appended after index must chain to.
func (w *WAL) Checksum(index uint64) (uint32, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case index < w.base.index:
		return 0, fmt.Errorf("%w: checksum of %d below the compaction watermark %d", ErrCompacted, index, w.base.index)
	case index > w.tip.index:
		return 0, fmt.Errorf("%w: checksum of %d beyond last index %d", ErrOutOfRange, index, w.tip.index)
	case index == w.base.index:
		return w.base.checksum, nil
	}
	return w.metas[index-w.base.index-1].checksum, nil
}
