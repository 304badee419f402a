package wal

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// File names in the WAL directory. Every segment-like name carries the generation in
// 16 hex digits, so that a listing alone yields the highest generation ever used.
const (
	prefixSegment = "seg-"     // a live segment
	prefixFree    = "free-"    // a compacted segment kept for reuse
	prefixSpare   = "spare-"   // a fresh zero-filled file made ahead of need
	prefixTmp     = "tmp-"     // a segment being initialised; never read
	prefixCorrupt = "corrupt-" // a segment behind a recovery break; kept for an operator
	suffixSegment = ".wal"

	// lockFileName is the file Open locks (vfs.FS.Lock) for as long as the WAL is open.
	lockFileName = "LOCK"
)

func segmentFileName(prefix string, generation uint64) string {
	return fmt.Sprintf("%s%016x%s", prefix, generation, suffixSegment)
}

// parseSegmentFileName returns the prefix and generation of a WAL file name.
func parseSegmentFileName(name string) (string, uint64, bool) {
	for _, prefix := range []string{prefixSegment, prefixFree, prefixSpare, prefixTmp, prefixCorrupt} {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		hex, ok := strings.CutSuffix(rest, suffixSegment)
		if !ok || len(hex) != 16 {
			return "", 0, false
		}
		g, err := strconv.ParseUint(hex, 16, 64)
		if err != nil {
			return "", 0, false
		}
		return prefix, g, true
	}
	return "", 0, false
}

// segment is a segment file in the log.
type segment struct {
	name string // base name, seg-<generation>.wal
	file vfs.File
	hdr  segmentHeader

	// The fields below belong to the pipeline (guarded by WAL.ioMu).

	// writeOffset is where the next batch goes. Invariant: a multiple of
	// hdr.blockBytes, in [blockBytes, hdr.segmentBytes].
	writeOffset int64
	// dirty: written since the last fdatasync.
	dirty bool
	// unvouched: the last batch written holds records and no later batch, seal or
	// segment vouches for it on disk (see Verdict Ambiguous).
	unvouched bool
	// prepared: the preparer was asked for the next segment's file (once this one is
	// half full, so that its zero fill spreads over the segment's life).
	prepared bool
	// reused: the file may hold bytes of an earlier life past writeOffset. Each batch
	// write then also zeroes the block after it, so that a log that ends cleanly ends
	// at a zero block, not in the middle of an old batch (which would read as torn).
	reused bool
}

// room is how many body bytes one more batch can carry.
func (s *segment) room() int64 {
	return int64(s.hdr.segmentBytes) - s.writeOffset - batchHeaderBytes
}

// chainTip is a point of the hash chain: the record at index, or the base before the
// first record.
type chainTip struct {
	index    uint64
	term     uint64
	checksum uint32
}

// placement is where the flusher put a record.
type placement struct {
	index    uint64
	checksum uint32
	seg      *segment
	offset   int64
}

// createSegment makes a new segment durable before it has a name. It takes a spare
// (a fresh zero-filled file the preparer made ahead), else a free file (a compacted
// segment), else creates a file; it preallocates it, writes and fdatasyncs the header,
// renames it to seg-<generation>.wal and syncs the directory. A reused file keeps its
// old bytes past the header; the generation in every batch tells them apart.
//
// A fresh file is zero-filled, not only fallocated, while the WAL opens (there is time
// then): an fdatasync that lands in fallocated but never written blocks must also
// commit the extent conversion to the file system's journal, which costs about as much
// again. During a flush there is no time, and a fresh file is only fallocated; the
// preparer keeps a spare ready so that this is rare.
func (w *WAL) createSegment(hdr segmentHeader) (*segment, error) {
	tmp := filepath.Join(w.dir, segmentFileName(prefixTmp, hdr.generation))
	var f vfs.File
	var err error
	reused, fresh := false, false
	switch {
	case len(w.spares) > 0:
		old := w.spares[len(w.spares)-1]
		w.spares = w.spares[:len(w.spares)-1]
		if err = w.fs.Rename(filepath.Join(w.dir, old), tmp); err == nil {
			f, err = w.fs.Open(tmp)
		}
	case len(w.free) > 0:
		reused = true
		old := w.free[len(w.free)-1]
		w.free = w.free[:len(w.free)-1]
		if err = w.fs.Rename(filepath.Join(w.dir, old), tmp); err == nil {
			f, err = w.fs.Open(tmp)
		}
	default:
		fresh = true
		f, err = w.fs.Create(tmp)
	}
	if err != nil {
		return nil, fmt.Errorf("create segment %d: %w", hdr.generation, err)
	}
	seg, err := w.initSegment(f, tmp, hdr, fresh && w.opening)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("create segment %d: %w", hdr.generation, err)
	}
	seg.reused = reused
	return seg, nil
}

// zeroFill writes zeros over [from, size) of f.
func zeroFill(f vfs.File, from, size int64) error {
	zeros := make([]byte, min(1<<20, size))
	for off := from; off < size; off += int64(len(zeros)) {
		n := min(int64(len(zeros)), size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
	}
	return nil
}

func (w *WAL) initSegment(f vfs.File, tmp string, hdr segmentHeader, fill bool) (*segment, error) {
	if err := f.Preallocate(int64(hdr.segmentBytes)); err != nil {
		return nil, err
	}
	if fill {
		if err := zeroFill(f, int64(hdr.blockBytes), int64(hdr.segmentBytes)); err != nil {
			return nil, err
		}
	}
	block := make([]byte, hdr.blockBytes)
	hdr.encode(block)
	if _, err := f.WriteAt(block, 0); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	w.stats.syncs.Add(1)
	name := segmentFileName(prefixSegment, hdr.generation)
	if err := w.fs.Rename(tmp, filepath.Join(w.dir, name)); err != nil {
		return nil, err
	}
	if err := w.fs.SyncDir(w.dir); err != nil {
		return nil, err
	}
	return &segment{name: name, file: f, hdr: hdr, writeOffset: int64(hdr.blockBytes)}, nil
}

// prepareSpare is StepPrepare: it makes a spare segment file (fresh, zero-filled,
// fdatasync'd) when the active segment passed half full and no free or spare file is
// waiting, so that rotation never waits for a zero fill and never writes into
// fallocated blocks. With compaction recycling files it rarely has work. It is an
// optimisation only: a spare that cannot be made is logged and skipped. The file's I/O
// runs without ioMu, so that the flusher is not held up by a zero fill.
func (w *WAL) prepareSpare() {
	w.ioMu.Lock()
	w.spareWanted = false
	need := len(w.spares) == 0 && len(w.free) == 0
	w.spareSeq++
	name := segmentFileName(prefixSpare, w.spareSeq)
	w.ioMu.Unlock()
	if !need {
		return
	}
	if err := w.makeSpare(name); err != nil {
		w.log.Warn("wal: cannot prepare a spare segment file", "file", name, "err", err)
		_ = w.fs.Remove(filepath.Join(w.dir, name))
		return
	}
	w.ioMu.Lock()
	w.spares = append(w.spares, name)
	w.ioMu.Unlock()
}

func (w *WAL) makeSpare(name string) error {
	f, err := w.fs.Create(filepath.Join(w.dir, name))
	if err != nil {
		return err
	}
	size := w.opts.SegmentBytes
	err = f.Preallocate(size)
	if err == nil {
		err = zeroFill(f, 0, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if errClose := f.Close(); err == nil {
		err = errClose
	}
	return err
}

// writeBatch writes recs (encoded records continuing tip) as one batch at the segment's
// write offset and returns the new tip. The caller has checked that they fit.
//
// Precondition: the segment is not dirty. This is what makes a batch header a sync
// boundary: it is written only after every earlier batch was fdatasync'd.
func (w *WAL) writeBatch(seg *segment, recs [][]byte, tip chainTip, placed []placement) (chainTip, []placement, error) {
	if seg.dirty {
		violated("batch written to %s at %d while the previous batch is not synced", seg.name, seg.writeOffset)
	}
	block := int64(seg.hdr.blockBytes)
	buf := append(w.buf[:0], make([]byte, batchHeaderBytes)...)
	start := tip
	for _, rec := range recs {
		r, n, err := decodeRecord(rec, len(rec))
		if err == nil {
			err = r.follows(tip.index, tip.term, tip.checksum)
		}
		if err != nil || n != len(rec) {
			return tip, placed, fmt.Errorf("%w: record in memory failed verification before write: %v", ErrCorrupt, err)
		}
		placed = append(placed, placement{index: r.index, checksum: r.checksum, seg: seg, offset: seg.writeOffset + int64(len(buf))})
		buf = append(buf, rec...)
		tip = chainTip{index: r.index, term: r.term, checksum: r.checksum}
	}
	body := buf[batchHeaderBytes:]
	if int64(len(body)) > seg.room() {
		violated("batch of %d bytes overflows %s (room %d)", len(body), seg.name, seg.room())
	}
	batchHeader{
		generation:    seg.hdr.generation,
		offset:        uint64(seg.writeOffset),
		indexFirst:    start.index + 1,
		durableBefore: start.index,
		count:         uint32(len(recs)),
		bodyBytes:     uint32(len(body)),
		bodyChecksum:  bodyChecksum(seg.hdr.generation, body),
		checksumPrev:  start.checksum,
		checksumLast:  tip.checksum,
	}.encode(buf)
	total := alignUp(int64(len(buf)), block)
	write := total
	if seg.reused && seg.writeOffset+total+block <= int64(seg.hdr.segmentBytes) {
		write += block
	}
	buf = append(buf, make([]byte, write-int64(len(buf)))...)
	w.buf = buf
	if _, err := seg.file.WriteAt(buf, seg.writeOffset); err != nil {
		return start, placed, fmt.Errorf("write batch to %s at %d: %w", seg.name, seg.writeOffset, err)
	}
	seg.writeOffset += total
	if !seg.prepared && seg.writeOffset > int64(seg.hdr.segmentBytes)/2 {
		seg.prepared = true
		w.spareWanted = true
		ring(w.prepCh)
	}
	seg.dirty = true
	seg.unvouched = len(recs) > 0
	w.stats.batches.Add(1)
	return tip, placed, nil
}

// syncSegment fdatasyncs seg if it has unsynced writes.
func (w *WAL) syncSegment(seg *segment) error {
	if seg == nil || !seg.dirty {
		return nil
	}
	if err := seg.file.Sync(); err != nil {
		return fmt.Errorf("fdatasync %s: %w", seg.name, err)
	}
	seg.dirty = false
	w.stats.syncs.Add(1)
	return nil
}
