package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Checksums are CRC-32C (Castagnoli), computed with the SSE4.2/ARMv8 CRC instructions
// that hash/crc32 uses on amd64 and arm64. A CRC is not a cryptographic hash: it guards
// against accidental damage (bit rot, torn and misdirected writes), not an adversary.
// It detects every burst of up to 32 bits and, for the record sizes here, every error of
// up to 3 bits; any other damage passes with probability 2^-32 per check. Each record
// is covered twice (its own checksum, and its batch's body checksum), and every field
// that positions it (index, chain value, generation, offset) is cross-checked, so
// accepting damaged bytes needs several independent 2^-32 coincidences.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

var le = binary.LittleEndian

// Record layout (little endian). A record is a log entry framed for the disk and the
// wire; its bytes do not depend on where it is stored.
//
//	offset size field
//	0      4    checksum      CRC-32C of bytes [4, 32+length)
//	4      4    checksumPrev  checksum of the record at index-1 (the hash chain)
//	8      8    index
//	16     8    term
//	24     4    length        payload bytes
//	28     1    kind          1 = entry
//	29     3    reserved      zero
//	32     n    payload
const (
	recordHeaderBytes = 32
	recordKindEntry   = 1
)

// record is a decoded, checksum-verified record. data aliases the decoded buffer.
type record struct {
	checksum     uint32
	checksumPrev uint32
	index        uint64
	term         uint64
	data         []byte
}

// encodeRecord appends the framed record to dst and returns the result and the
// record's checksum.
func encodeRecord(dst []byte, checksumPrev uint32, index, term uint64, data []byte) ([]byte, uint32) {
	start := len(dst)
	dst = append(dst, make([]byte, recordHeaderBytes)...)
	h := dst[start:]
	le.PutUint32(h[4:], checksumPrev)
	le.PutUint64(h[8:], index)
	le.PutUint64(h[16:], term)
	le.PutUint32(h[24:], uint32(len(data)))
	h[28] = recordKindEntry
	dst = append(dst, data...)
	sum := checksum(dst[start+4:])
	le.PutUint32(dst[start:], sum)
	return dst, sum
}

// decodeRecord parses and verifies the record at the start of b. It trusts the length
// field only after checking it against lengthMax and len(b), so a damaged length can
// neither allocate nor read out of bounds. It returns the record and its size in bytes.
// It does not check the record's place in the log (index, chain): see record.follows.
func decodeRecord(b []byte, lengthMax int) (record, int, error) {
	if len(b) < recordHeaderBytes {
		return record{}, 0, fmt.Errorf("%w: record header needs %d bytes, have %d", ErrCorrupt, recordHeaderBytes, len(b))
	}
	length := le.Uint32(b[24:])
	if uint64(length) > uint64(lengthMax) {
		return record{}, 0, fmt.Errorf("%w: record length %d exceeds maximum %d", ErrCorrupt, length, lengthMax)
	}
	size := recordHeaderBytes + int(length)
	if size > len(b) {
		return record{}, 0, fmt.Errorf("%w: record of %d bytes overruns its buffer of %d", ErrCorrupt, size, len(b))
	}
	// A zero checksum is a value like any other: it never means "not sealed, skip".
	if want, got := le.Uint32(b[0:]), checksum(b[4:size]); want != got {
		return record{}, 0, fmt.Errorf("%w: record checksum %08x, computed %08x", ErrCorrupt, want, got)
	}
	if b[28] != recordKindEntry || b[29] != 0 || b[30] != 0 || b[31] != 0 {
		return record{}, 0, fmt.Errorf("%w: record kind %d or reserved bytes %x invalid", ErrCorrupt, b[28], b[29:32])
	}
	r := record{
		checksum:     le.Uint32(b[0:]),
		checksumPrev: le.Uint32(b[4:]),
		index:        le.Uint64(b[8:]),
		term:         le.Uint64(b[16:]),
		data:         b[recordHeaderBytes:size:size],
	}
	if r.index == 0 || r.term == 0 {
		return record{}, 0, fmt.Errorf("%w: record index %d term %d (both must be positive)", ErrCorrupt, r.index, r.term)
	}
	return r, size, nil
}

// follows checks that r is the record after (index, term, checksum) in a log.
func (r record) follows(index, term uint64, sum uint32) error {
	if r.index != index+1 {
		return fmt.Errorf("%w: record index %d, expected %d", ErrCorrupt, r.index, index+1)
	}
	if r.checksumPrev != sum {
		return fmt.Errorf("%w: record %d chains to %08x, previous record is %08x", ErrCorrupt, r.index, r.checksumPrev, sum)
	}
	if r.term < term {
		return fmt.Errorf("%w: record %d term %d below previous term %d", ErrCorrupt, r.index, r.term, term)
	}
	return nil
}

// chainSeed is the chain value before the first record after base (index, term): what
// record index+1 chains to when nothing precedes it in this log. It is never zero by
// construction of the input, and zero carries no special meaning anyway.
func chainSeed(index, term uint64) uint32 {
	var b [40]byte
	copy(b[:], "durableraft wal chain v1")
	le.PutUint64(b[24:], index)
	le.PutUint64(b[32:], term)
	return checksum(b[:])
}

// Batch header layout. Every group-commit flush writes one batch per segment it touches:
// this header, the records, zero padding to the segment's block size. The header is the
// sync boundary on disk: the flusher writes a batch only after every earlier batch is
// fdatasync'd, so a valid header proves everything before it was durable.
//
//	offset size field
//	0      4    checksum       CRC-32C of bytes [4, 64)
//	4      4    magic          "DRWB"
//	8      8    generation     the segment's generation
//	16     8    offset         where this header sits in the segment file
//	24     8    indexFirst     index of the first record (durableBefore+1)
//	32     8    durableBefore  every index up to here was fdatasync'd before this write
//	40     4    count          records in the batch (0 for a seal)
//	44     4    bodyBytes      bytes of records after the header
//	48     4    bodyChecksum   CRC-32C of the body, seeded with the generation
//	52     4    checksumPrev   chain value before the first record
//	56     4    checksumLast   chain value after the last record
//	60     4    reserved       zero
const (
	batchHeaderBytes = 64
	magicBatch       = 0x42575244 // "DRWB" little endian
)

type batchHeader struct {
	generation    uint64
	offset        uint64
	indexFirst    uint64
	durableBefore uint64
	count         uint32
	bodyBytes     uint32
	bodyChecksum  uint32
	checksumPrev  uint32
	checksumLast  uint32
}

func (h batchHeader) encode(b []byte) {
	b = b[:batchHeaderBytes]
	clear(b)
	le.PutUint32(b[4:], magicBatch)
	le.PutUint64(b[8:], h.generation)
	le.PutUint64(b[16:], h.offset)
	le.PutUint64(b[24:], h.indexFirst)
	le.PutUint64(b[32:], h.durableBefore)
	le.PutUint32(b[40:], h.count)
	le.PutUint32(b[44:], h.bodyBytes)
	le.PutUint32(b[48:], h.bodyChecksum)
	le.PutUint32(b[52:], h.checksumPrev)
	le.PutUint32(b[56:], h.checksumLast)
	le.PutUint32(b[0:], checksum(b[4:]))
}

// headerStatus says what a header-sized run of bytes holds.
type headerStatus uint8

const (
	headerValid   headerStatus = iota + 1 // checksum and magic verify
	headerZero                            // all zero: nothing was ever written here
	headerDamaged                         // anything else
)

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func decodeBatchHeader(b []byte) (batchHeader, headerStatus) {
	if len(b) < batchHeaderBytes {
		return batchHeader{}, headerDamaged
	}
	b = b[:batchHeaderBytes]
	if isZero(b) {
		return batchHeader{}, headerZero
	}
	if le.Uint32(b[0:]) != checksum(b[4:]) || le.Uint32(b[4:]) != magicBatch || le.Uint32(b[60:]) != 0 {
		return batchHeader{}, headerDamaged
	}
	return batchHeader{
		generation:    le.Uint64(b[8:]),
		offset:        le.Uint64(b[16:]),
		indexFirst:    le.Uint64(b[24:]),
		durableBefore: le.Uint64(b[32:]),
		count:         le.Uint32(b[40:]),
		bodyBytes:     le.Uint32(b[44:]),
		bodyChecksum:  le.Uint32(b[48:]),
		checksumPrev:  le.Uint32(b[52:]),
		checksumLast:  le.Uint32(b[56:]),
	}, headerValid
}

// generationSeed seeds a batch body checksum with the segment's generation, so that a
// body left by an earlier life of a reused file never verifies in the current one.
func generationSeed(generation uint64) uint32 {
	var b [8]byte
	le.PutUint64(b[:], generation)
	return checksum(b[:])
}

func bodyChecksum(generation uint64, body []byte) uint32 {
	return crc32.Update(generationSeed(generation), castagnoli, body)
}

// Segment header layout, at offset 0 of every segment file (the rest of the first block
// is zero). A segment file is renamed to its final name only after this header is
// fdatasync'd, so a segment whose header fails to verify has been damaged at rest.
//
//	offset size field
//	0      4    checksum      CRC-32C of bytes [4, 64)
//	4      4    magic         "DRWS"
//	8      2    version       1
//	10     2    flags         bit 0: base (the log restarts here; older segments are void)
//	12     4    blockBytes    batch alignment
//	16     8    generation    unique per segment life, increasing; also in the file name
//	24     8    indexFirst    index of the first record the segment may hold
//	32     8    termPrev      term at indexFirst-1
//	40     8    segmentBytes  size the file was preallocated to
//	48     4    checksumPrev  chain value at indexFirst-1
//	52     12   reserved      zero
const (
	segmentHeaderBytes = 64
	magicSegment       = 0x53575244 // "DRWS" little endian
	formatVersion      = 1
	flagBase           = 1
)

type segmentHeader struct {
	flags        uint16
	blockBytes   uint32
	generation   uint64
	indexFirst   uint64
	termPrev     uint64
	segmentBytes uint64
	checksumPrev uint32
}

func (h segmentHeader) encode(b []byte) {
	b = b[:segmentHeaderBytes]
	clear(b)
	le.PutUint32(b[4:], magicSegment)
	le.PutUint16(b[8:], formatVersion)
	le.PutUint16(b[10:], h.flags)
	le.PutUint32(b[12:], h.blockBytes)
	le.PutUint64(b[16:], h.generation)
	le.PutUint64(b[24:], h.indexFirst)
	le.PutUint64(b[32:], h.termPrev)
	le.PutUint64(b[40:], h.segmentBytes)
	le.PutUint32(b[48:], h.checksumPrev)
	le.PutUint32(b[0:], checksum(b[4:]))
}

// Limits on what a segment header may claim, so that a header that verifies by
// coincidence still cannot ask for an absurd buffer.
const (
	blockBytesMin   = 512
	blockBytesMax   = 1 << 20
	segmentBytesMax = 1 << 32
)

func decodeSegmentHeader(b []byte) (segmentHeader, error) {
	if len(b) < segmentHeaderBytes {
		return segmentHeader{}, fmt.Errorf("%w: segment header needs %d bytes, have %d", ErrCorrupt, segmentHeaderBytes, len(b))
	}
	b = b[:segmentHeaderBytes]
	if want, got := le.Uint32(b[0:]), checksum(b[4:]); want != got {
		return segmentHeader{}, fmt.Errorf("%w: segment header checksum %08x, computed %08x", ErrCorrupt, want, got)
	}
	h := segmentHeader{
		flags:        le.Uint16(b[10:]),
		blockBytes:   le.Uint32(b[12:]),
		generation:   le.Uint64(b[16:]),
		indexFirst:   le.Uint64(b[24:]),
		termPrev:     le.Uint64(b[32:]),
		segmentBytes: le.Uint64(b[40:]),
		checksumPrev: le.Uint32(b[48:]),
	}
	switch {
	case le.Uint32(b[4:]) != magicSegment:
		return segmentHeader{}, fmt.Errorf("%w: segment magic %08x", ErrCorrupt, le.Uint32(b[4:]))
	case le.Uint16(b[8:]) != formatVersion:
		// A header that verifies and names another version was written by
		// another build: not damage. Open refuses it (docs/raftd.md,
		// "Format versions") instead of quarantining the segment.
		return segmentHeader{}, fmt.Errorf("%w: segment format version %d, this build reads version %d only", ErrVersion, le.Uint16(b[8:]), formatVersion)
	case h.flags&^flagBase != 0 || !isZero(b[52:]):
		return segmentHeader{}, fmt.Errorf("%w: segment header reserved bits set", ErrCorrupt)
	case h.blockBytes < blockBytesMin || h.blockBytes > blockBytesMax || h.blockBytes&(h.blockBytes-1) != 0:
		return segmentHeader{}, fmt.Errorf("%w: segment block size %d", ErrCorrupt, h.blockBytes)
	case h.segmentBytes < 2*uint64(h.blockBytes) || h.segmentBytes > segmentBytesMax || h.segmentBytes%uint64(h.blockBytes) != 0:
		return segmentHeader{}, fmt.Errorf("%w: segment size %d with block size %d", ErrCorrupt, h.segmentBytes, h.blockBytes)
	case h.indexFirst == 0:
		return segmentHeader{}, fmt.Errorf("%w: segment first index 0", ErrCorrupt)
	}
	return h, nil
}

// alignUp rounds n up to a multiple of block, a power of two.
func alignUp(n, block int64) int64 { return (n + block - 1) &^ (block - 1) }
