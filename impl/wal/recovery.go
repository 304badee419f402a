package wal

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// diskSegment is a seg-* file found at Open.
type diskSegment struct {
	name       string
	generation uint64 // from the name
	file       vfs.File
	hdr        segmentHeader
	hdrErr     error // the header failed verification (after re-reads)
}

// segmentSource is a segment's bytes as read at recovery, and the means to read a range
// again: a range that fails verification is re-read before it is called damaged.
type segmentSource struct {
	name    string
	file    vfs.File
	buf     []byte
	retries int
	healed  int
}

// verify reports whether check accepts buf[off:off+n], re-reading the range from the
// file up to retries times while it does not.
func (s *segmentSource) verify(off, n int64, check func([]byte) bool) bool {
	if check(s.buf[off : off+n]) {
		return true
	}
	for range s.retries {
		if err := s.reread(off, n); err != nil {
			continue
		}
		if check(s.buf[off : off+n]) {
			s.healed++
			return true
		}
	}
	return false
}

func (s *segmentSource) reread(off, n int64) error {
	_, err := s.file.ReadAt(s.buf[off:off+n], off)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// scannedRecord is a record accepted by the scan.
type scannedRecord struct {
	index    uint64
	term     uint64
	checksum uint32
	offset   int64
	size     uint32
}

// scanResult is what scanning one segment found.
type scanResult struct {
	end     scanEnd
	detail  string
	records []scannedRecord
	// tip is the chain after the last accepted record.
	tip chainTip
	// writeOffset is the first batch slot not taken into the log.
	writeOffset int64
	// lastBatchOffset is where the last accepted batch starts (-1: none in this segment);
	// lastBatchRecords says it holds records (it is not a seal), so nothing on disk
	// vouches for it.
	lastBatchOffset  int64
	lastBatchRecords bool
	// evidenceOffset is where a valid current-generation batch lies behind the stop
	// (-1: none found, or not looked for).
	evidenceOffset int64
	// batches are the accepted batches, for diagnostics and tests.
	batches []batchExtent
}

// batchExtent is where an accepted batch lies: header at offset, live bytes (header and
// the records taken into the log) up to liveEnd.
type batchExtent struct {
	offset     int64
	liveEnd    int64
	indexFirst uint64
	count      uint32
}

// scanSegment walks the batches of one segment from its first block, continuing the
// chain at tip, until something stops it: the limit index (where a later segment takes
// over), the end of the file, or a slot that does not hold the next valid batch. It
// only reads src and never panics on its bytes.
func scanSegment(src *segmentSource, hdr segmentHeader, tip chainTip, limit uint64) scanResult {
	block := int64(hdr.blockBytes)
	size := int64(len(src.buf))
	res := scanResult{tip: tip, lastBatchOffset: -1, evidenceOffset: -1}
	for p := block; ; {
		res.writeOffset = p
		if res.tip.index >= limit {
			res.end = endLimit
			return res
		}
		if p+batchHeaderBytes > size {
			res.end = endFull
			return res
		}
		var h batchHeader
		var st headerStatus
		src.verify(p, batchHeaderBytes, func(b []byte) bool {
			h, st = decodeBatchHeader(b)
			return st != headerDamaged
		})
		switch {
		case st == headerZero:
			res.end, res.detail = endZero, fmt.Sprintf("zero batch slot at %d", p)
			return res
		case st == headerDamaged:
			res.end, res.detail = endHeaderDamaged, fmt.Sprintf("batch header at %d fails its checksum", p)
			return res
		case h.generation < hdr.generation:
			res.end, res.detail = endStale, fmt.Sprintf("batch header at %d from generation %d (segment is %d)", p, h.generation, hdr.generation)
			return res
		}
		if why := misfit(h, hdr, p, size, res.tip); why != "" {
			res.end, res.detail = endMisfit, fmt.Sprintf("batch header at %d: %s", p, why)
			return res
		}
		var recs []scannedRecord
		var limitHit bool
		var bodyErr error
		ok := src.verify(p+batchHeaderBytes, int64(h.bodyBytes), func(body []byte) bool {
			recs, limitHit, bodyErr = verifyBody(h, body, res.tip, limit, hdr.generation, p+batchHeaderBytes)
			return bodyErr == nil
		})
		if !ok {
			res.end, res.detail = endBodyDamaged, fmt.Sprintf("batch at %d (indexes from %d): %v", p, h.indexFirst, bodyErr)
			return res
		}
		res.records = append(res.records, recs...)
		ext := batchExtent{offset: p, liveEnd: p + batchHeaderBytes, indexFirst: h.indexFirst, count: h.count}
		if n := len(recs); n > 0 {
			r := recs[n-1]
			res.tip = chainTip{index: r.index, term: r.term, checksum: r.checksum}
			ext.liveEnd = r.offset + int64(r.size)
		}
		res.batches = append(res.batches, ext)
		res.lastBatchOffset, res.lastBatchRecords = p, h.count > 0
		p += alignUp(batchHeaderBytes+int64(h.bodyBytes), block)
		if limitHit {
			res.writeOffset, res.end = p, endLimit
			return res
		}
	}
}

// misfit says why a valid current-or-later-generation batch header at offset p does not
// continue the log at tip, or "" if it does.
func misfit(h batchHeader, hdr segmentHeader, p, size int64, tip chainTip) string {
	switch {
	case h.generation != hdr.generation:
		return fmt.Sprintf("generation %d, segment is %d", h.generation, hdr.generation)
	case h.offset != uint64(p):
		return fmt.Sprintf("records offset %d (misdirected write)", h.offset)
	case h.indexFirst != tip.index+1 || h.durableBefore != tip.index:
		return fmt.Sprintf("first index %d durable-before %d, log is at %d", h.indexFirst, h.durableBefore, tip.index)
	case h.checksumPrev != tip.checksum:
		return fmt.Sprintf("chains to %08x, log is at %08x", h.checksumPrev, tip.checksum)
	case int64(h.bodyBytes) > size-p-batchHeaderBytes:
		return fmt.Sprintf("body of %d bytes overruns the segment", h.bodyBytes)
	case uint64(h.count)*recordHeaderBytes > uint64(h.bodyBytes):
		return fmt.Sprintf("%d records cannot fit in %d bytes", h.count, h.bodyBytes)
	}
	return ""
}

// verifyBody checks every record of a batch body: framing and checksum, the hash chain
// from tip, terms that never decrease, then the batch's own count, chain end and
// generation-seeded body checksum. When the chain reaches limit inside the batch, the
// rest is superseded by a later segment and is not checked.
func verifyBody(h batchHeader, body []byte, tip chainTip, limit, generation uint64, bodyOffset int64) ([]scannedRecord, bool, error) {
	recs := make([]scannedRecord, 0, min(int(h.count), len(body)/recordHeaderBytes))
	pos := 0
	for i := range h.count {
		r, n, err := decodeRecord(body[pos:], len(body)-pos)
		if err == nil {
			err = r.follows(tip.index, tip.term, tip.checksum)
		}
		if err != nil {
			return nil, false, fmt.Errorf("record %d of %d: %w", i+1, h.count, err)
		}
		recs = append(recs, scannedRecord{index: r.index, term: r.term, checksum: r.checksum, offset: bodyOffset + int64(pos), size: uint32(n)})
		tip = chainTip{index: r.index, term: r.term, checksum: r.checksum}
		pos += n
		if tip.index >= limit {
			return recs, true, nil
		}
	}
	switch {
	case pos != len(body):
		return nil, false, fmt.Errorf("%w: %d records use %d of %d body bytes", ErrCorrupt, h.count, pos, len(body))
	case tip.checksum != h.checksumLast:
		return nil, false, fmt.Errorf("%w: chain ends at %08x, header says %08x", ErrCorrupt, tip.checksum, h.checksumLast)
	case bodyChecksum(generation, body) != h.bodyChecksum:
		return nil, false, fmt.Errorf("%w: body checksum mismatch (generation %d)", ErrCorrupt, generation)
	}
	return recs, false, nil
}

// findEvidence looks behind a stop for a valid batch header of the segment's generation.
// The flusher writes a batch only after every earlier one is fdatasync'd, so such a
// header proves the break in front of it was durable data. The region is read twice, so
// that a transient flip cannot hide the evidence.
func findEvidence(src *segmentSource, generation uint64, from, block int64) int64 {
	size := int64(len(src.buf))
	for pass := range 2 {
		for off := alignUp(from, block); off+batchHeaderBytes <= size; off += block {
			if le.Uint32(src.buf[off+4:]) != magicBatch {
				continue
			}
			if h, st := decodeBatchHeader(src.buf[off:]); st == headerValid && h.generation == generation {
				return off
			}
		}
		if pass == 0 && from < size {
			_ = src.reread(from, size-from)
		}
	}
	return -1
}

type segmentScan struct {
	name string
	res  *scanResult
}

// recoveredLog is the log recovery rebuilt, and what to do with the files.
type recoveredLog struct {
	segs  []*segment
	metas []entryMeta
	base  chainTip // the compaction watermark: the chain at indexFirst-1
	tip   chainTip // the last intact record
	// last is the scan of the newest kept segment, lastSrc its bytes (for the rewrite of
	// an unvouched last batch); nil when no segment was kept.
	last    *scanResult
	lastSrc *segmentSource
	rec     Recovery
	// scans are the scan results of the kept segments, for diagnostics and tests.
	scans []segmentScan
	// discard: superseded segments, removed. quarantine: segments behind a break,
	// renamed to corrupt-*.
	discard    []*diskSegment
	quarantine []*diskSegment
}

// recoverLog rebuilds the log from the segments (sorted by generation) by walking the
// decision table. It returns an error only for I/O errors; damage becomes a verdict.
func (w *WAL) recoverLog(disk []*diskSegment) (*recoveredLog, error) {
	out := &recoveredLog{}
	out.base = chainTip{checksum: chainSeed(0, 0)}
	out.tip = out.base
	out.rec.EvidenceOffset = -1
	start := 0
	for i, d := range disk {
		if d.hdrErr == nil && d.hdr.flags&flagBase != 0 {
			start = i
		}
	}
	out.discard = append(out.discard, disk[:start]...)
	rel := disk[start:]
	if len(rel) == 0 {
		out.stop(decide(roleNone, endEmpty, false), "", "", 0)
		return out, nil
	}
	for k, d := range rel {
		role := roleInner
		if k == len(rel)-1 {
			role = roleLast
		}
		if d.hdrErr != nil {
			out.stop(decide(role, endSegmentHeader, false), d.hdrErr.Error(), d.name, 0)
			out.quarantine = append(out.quarantine, rel[k:]...)
			return out, nil
		}
		limit := uint64(math.MaxUint64)
		nextDamaged := k+1 < len(rel) && rel[k+1].hdrErr != nil
		for j := k + 1; j < len(rel) && rel[j].hdrErr == nil; j++ {
			limit = min(limit, rel[j].hdr.indexFirst-1)
		}
		if role == roleInner && d.hdr.indexFirst > limit {
			// A later segment starts at or below this one: a truncation replaced all of
			// it (startSegment drops every segment starting after the new tip).
			out.rec.Path = append(out.rec.Path, decide(roleInner, endSuperseded, false).label)
			out.discard = append(out.discard, d)
			continue
		}
		if len(out.segs) == 0 {
			// The oldest segment still needed: its header is the compaction watermark.
			out.base = chainTip{index: d.hdr.indexFirst - 1, term: d.hdr.termPrev, checksum: d.hdr.checksumPrev}
			out.tip = out.base
		} else if d.hdr.indexFirst != out.tip.index+1 || d.hdr.checksumPrev != out.tip.checksum || d.hdr.termPrev != out.tip.term {
			why := fmt.Sprintf("segment starts at %d (term %d, chain %08x), log ends at %d (term %d, chain %08x)",
				d.hdr.indexFirst, d.hdr.termPrev, d.hdr.checksumPrev, out.tip.index, out.tip.term, out.tip.checksum)
			out.stop(decide(role, endLink, false), why, d.name, 0)
			out.quarantine = append(out.quarantine, rel[k:]...)
			return out, nil
		}
		if nextDamaged {
			// Where the damaged segment took over is unknown: it may be a truncation
			// segment superseding any part of this one (startSegment makes this the only
			// segment it can overlap). Nothing here can be trusted to be the log.
			why := fmt.Sprintf("%v; %s before it is dropped whole, since where the damaged segment took over is unknown", rel[k+1].hdrErr, d.name)
			out.stop(decide(roleInner, endSegmentHeader, false), why, d.name, 0)
			out.quarantine = append(out.quarantine, rel[k:]...)
			return out, nil
		}
		src, err := w.loadSegment(d)
		if err != nil {
			return nil, err
		}
		seg := &segment{name: d.name, file: d.file, hdr: d.hdr}
		res := scanSegment(src, d.hdr, out.tip, limit)
		out.rec.RereadsHealed += src.healed
		for _, r := range res.records {
			out.metas = append(out.metas, entryMeta{term: r.term, seg: seg, offset: r.offset, size: r.size, checksum: r.checksum})
		}
		out.tip = res.tip
		out.segs = append(out.segs, seg)
		out.last, out.lastSrc = &res, src
		out.scans = append(out.scans, segmentScan{name: d.name, res: &res})
		switch res.end {
		case endZero, endStale, endHeaderDamaged, endBodyDamaged:
			if role == roleLast {
				res.evidenceOffset = findEvidence(src, d.hdr.generation, res.writeOffset+int64(d.hdr.blockBytes), int64(d.hdr.blockBytes))
			}
		}
		c := decide(role, res.end, res.evidenceOffset >= 0)
		if c.action == actionContinue {
			out.rec.Path = append(out.rec.Path, c.label)
			continue
		}
		out.stop(c, res.detail, d.name, res.writeOffset)
		out.rec.EvidenceOffset = res.evidenceOffset
		if c.verdict == Truncated {
			out.quarantine = append(out.quarantine, rel[k+1:]...)
		}
		return out, nil
	}
	panic("wal: recovery walked past the last segment") // decide never continues on roleLast
}

func (out *recoveredLog) stop(c recoveryCase, detail, segName string, offset int64) {
	out.rec.Path = append(out.rec.Path, c.label)
	out.rec.Verdict, out.rec.Case = c.verdict, c.label
	out.rec.Reason = c.why
	if detail != "" {
		out.rec.Reason += ": " + detail
	}
	out.rec.StopSegment, out.rec.StopOffset = segName, offset
}

// loadSegment reads a segment's bytes, up to the size its header claims.
func (w *WAL) loadSegment(d *diskSegment) (*segmentSource, error) {
	size, err := d.file.Size()
	if err != nil {
		return nil, fmt.Errorf("wal: size of %s: %w", d.name, err)
	}
	size = min(size, int64(d.hdr.segmentBytes))
	src := &segmentSource{name: d.name, file: d.file, buf: make([]byte, size), retries: w.opts.ReadRetries}
	var readErr error
	for range w.opts.ReadRetries + 1 {
		if readErr = src.reread(0, size); readErr == nil {
			return src, nil
		}
	}
	return nil, fmt.Errorf("wal: read %s: %w", d.name, readErr)
}
