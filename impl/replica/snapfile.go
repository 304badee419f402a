package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal/vfs"
	"github.com/durableraft/durableraft/trace"
)

// The snapshot file (docs/snapshots.md, "File format"). Little endian,
// CRC-32C (Castagnoli) everywhere:
//
//	header   the metadata, its own checksum first
//	blocks   the state machine's stream cut into BlockBytes pieces, each
//	         framed by a checksum of (its block number, its bytes)
//	trailer  the body's size and block count, and a checksum binding the
//	         header's checksum and every block's to the trailer
//
// Every part is verified when it is read (fail closed: a reader returns
// ErrSnapshotCorrupt and nothing after the damage); a file is written to a
// temporary name, fdatasync'd, renamed and its directory synced.

// ErrSnapshotCorrupt: a snapshot file (or stream) that does not verify.
var ErrSnapshotCorrupt = errors.New("replica: snapshot does not verify")

const (
	snapMagic        = "DRSNAPv1"
	snapTrailerMagic = "DRSNTRLR"
	snapVersion      = 1
	snapHeaderFixed  = 64
	snapTrailerBytes = 32
	snapFrameBytes   = 4 // a block's checksum
	// Bounds checked before anything is allocated.
	snapHeaderBytesMax = 1 << 28
	snapVotersMax      = 64
	snapBlockBytesMin  = 64
	snapBlockBytesMax  = 16 << 20
)

var snapCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// SnapshotMeta is a snapshot's metadata: its last entry, the WAL's chain
// value there (a log restarted after the snapshot links to it, so the
// records the leader ships after it verify), the cluster's voters, and,
// when the node traces, the trace's entries of the prefix (TracePrefix).
type SnapshotMeta struct {
	Index, Term uint64
	Chain       uint32
	Voters      []raft.NodeID
	// Membership is the configuration in force at Index (its voters are
	// Voters), when it is not Voters alone: it has learners or removed
	// ids, or was changed from the initial one (raft.Boot.Membership, the
	// MsgSnap's configuration entry). nil: Voters are the configuration.
	Membership  *raft.Membership
	TracePrefix []trace.Entry
	// BlockBytes is the body's block size (a transfer chunk).
	BlockBytes int
}

func (m *SnapshotMeta) info() raft.SnapshotInfo {
	return raft.SnapshotInfo{Index: m.Index, Term: m.Term}
}

// encodeSnapHeader encodes the header, checksum included.
func encodeSnapHeader(m *SnapshotMeta) ([]byte, error) {
	runs := trace.Runs(m.TracePrefix)
	switch {
	case m.Index < 1 || m.Term < 1 || m.Index > raft.IndexMax || m.Term > raft.TermMax:
		return nil, fmt.Errorf("replica: snapshot at %d/%d", m.Term, m.Index)
	case len(m.Voters) < 1 || len(m.Voters) > snapVotersMax:
		return nil, fmt.Errorf("replica: snapshot with %d voters", len(m.Voters))
	case m.BlockBytes < snapBlockBytesMin || m.BlockBytes > snapBlockBytesMax:
		return nil, fmt.Errorf("replica: snapshot block of %d bytes", m.BlockBytes)
	case m.TracePrefix != nil && uint64(len(m.TracePrefix)) != m.Index:
		return nil, fmt.Errorf("replica: snapshot at %d with a trace prefix of %d entries", m.Index, len(m.TracePrefix))
	case m.Membership != nil && (m.Membership.Valid() != nil || !slices.Equal(m.Membership.Voters, m.Voters)):
		return nil, fmt.Errorf("replica: snapshot configuration %v with the voters %v", *m.Membership, m.Voters)
	}
	var conf []byte
	if m.Membership != nil {
		conf = raft.EncodeMembership(*m.Membership)
	}
	b := make([]byte, snapHeaderFixed, snapHeaderFixed+8*len(m.Voters)+len(conf)+len(m.TracePrefix)+12*len(runs))
	copy(b[4:], snapMagic)
	le := binary.LittleEndian
	le.PutUint32(b[12:], snapVersion)
	le.PutUint32(b[20:], uint32(m.BlockBytes))
	le.PutUint64(b[24:], m.Index)
	le.PutUint64(b[32:], m.Term)
	le.PutUint32(b[40:], m.Chain)
	le.PutUint32(b[44:], uint32(len(m.Voters)))
	le.PutUint32(b[48:], uint32(len(runs)))
	for _, v := range m.Voters {
		b = le.AppendUint64(b, uint64(v))
	}
	le.PutUint32(b[52:], uint32(len(conf)))
	b = append(b, conf...)
	for _, r := range runs {
		b = le.AppendUint64(b, uint64(r.Term))
		b = le.AppendUint32(b, uint32(len(r.Values)))
		for _, v := range r.Values {
			if v < 1 || v > math.MaxUint8 {
				return nil, fmt.Errorf("replica: trace value %d", v)
			}
			b = append(b, byte(v))
		}
	}
	if len(b) > snapHeaderBytesMax {
		return nil, fmt.Errorf("replica: snapshot header of %d bytes", len(b))
	}
	le.PutUint32(b[16:], uint32(len(b)))
	le.PutUint32(b[0:], crc32.Checksum(b[4:], snapCastagnoli))
	return b, nil
}

// headerBytesOf reads the header's length from its fixed part, checked.
func headerBytesOf(fixed []byte) (int, error) {
	if len(fixed) < snapHeaderFixed {
		return 0, fmt.Errorf("%w: header of %d bytes", ErrSnapshotCorrupt, len(fixed))
	}
	if string(fixed[4:12]) != snapMagic {
		return 0, fmt.Errorf("%w: not a snapshot (magic %q)", ErrSnapshotCorrupt, fixed[4:12])
	}
	n := int(binary.LittleEndian.Uint32(fixed[16:]))
	if n < snapHeaderFixed || n > snapHeaderBytesMax {
		return 0, fmt.Errorf("%w: header of %d bytes", ErrSnapshotCorrupt, n)
	}
	return n, nil
}

// decodeSnapHeader decodes and verifies a whole header. It accepts exactly
// the bytes encodeSnapHeader writes (FuzzSnapshotHeader).
func decodeSnapHeader(b []byte) (SnapshotMeta, error) {
	var m SnapshotMeta
	n, err := headerBytesOf(b)
	if err != nil {
		return m, err
	}
	if n != len(b) {
		return m, fmt.Errorf("%w: header says %d bytes, has %d", ErrSnapshotCorrupt, n, len(b))
	}
	le := binary.LittleEndian
	if got, want := crc32.Checksum(b[4:], snapCastagnoli), le.Uint32(b); got != want {
		return m, fmt.Errorf("%w: header checksum %08x, computed %08x", ErrSnapshotCorrupt, want, got)
	}
	if v := le.Uint32(b[12:]); v != snapVersion || !isZeroBytes(b[56:64]) {
		return m, fmt.Errorf("%w: version %d or reserved bytes set", ErrSnapshotCorrupt, v)
	}
	m.BlockBytes = int(le.Uint32(b[20:]))
	m.Index, m.Term, m.Chain = le.Uint64(b[24:]), le.Uint64(b[32:]), le.Uint32(b[40:])
	voters, runs := int(le.Uint32(b[44:])), int(le.Uint32(b[48:]))
	switch {
	case m.Index < 1 || m.Term < 1 || m.Index > raft.IndexMax || m.Term > raft.TermMax:
		return m, fmt.Errorf("%w: snapshot at %d/%d", ErrSnapshotCorrupt, m.Term, m.Index)
	case m.BlockBytes < snapBlockBytesMin || m.BlockBytes > snapBlockBytesMax:
		return m, fmt.Errorf("%w: block of %d bytes", ErrSnapshotCorrupt, m.BlockBytes)
	case voters < 1 || voters > snapVotersMax || snapHeaderFixed+8*voters > n:
		return m, fmt.Errorf("%w: %d voters", ErrSnapshotCorrupt, voters)
	}
	p := b[snapHeaderFixed:]
	for k := 0; k < voters; k++ {
		id := raft.NodeID(le.Uint64(p))
		if id == raft.None || (k > 0 && id <= m.Voters[k-1]) {
			return m, fmt.Errorf("%w: voter %d after %v", ErrSnapshotCorrupt, id, m.Voters)
		}
		m.Voters, p = append(m.Voters, id), p[8:]
	}
	if confBytes := uint64(le.Uint32(b[52:])); confBytes > 0 {
		if confBytes > uint64(len(p)) {
			return m, fmt.Errorf("%w: a configuration of %d bytes in %d", ErrSnapshotCorrupt, confBytes, len(p))
		}
		conf, err := raft.DecodeMembership(p[:confBytes])
		if err != nil || !slices.Equal(conf.Voters, m.Voters) {
			return m, fmt.Errorf("%w: configuration %v (voters %v): %v", ErrSnapshotCorrupt, conf, m.Voters, err)
		}
		m.Membership, p = &conf, p[confBytes:]
	}
	prefix, err := decodeRuns(p, runs, m.Index)
	if err != nil {
		return m, err
	}
	m.TracePrefix = prefix
	return m, nil
}

// decodeRuns decodes the trace prefix: runs of increasing terms, together
// exactly index entries (or no runs at all).
func decodeRuns(p []byte, runs int, index uint64) ([]trace.Entry, error) {
	if runs == 0 {
		if len(p) != 0 {
			return nil, fmt.Errorf("%w: %d bytes after the voters", ErrSnapshotCorrupt, len(p))
		}
		return nil, nil
	}
	le := binary.LittleEndian
	var out []trace.Entry
	var term uint64
	for k := 0; k < runs; k++ {
		if len(p) < 12 {
			return nil, fmt.Errorf("%w: trace run %d truncated", ErrSnapshotCorrupt, k)
		}
		t, c := le.Uint64(p), uint64(le.Uint32(p[8:]))
		p = p[12:]
		if t <= term || t > raft.TermMax || c < 1 || c > uint64(len(p)) || uint64(len(out))+c > index {
			return nil, fmt.Errorf("%w: trace run %d: term %d after %d, %d entries", ErrSnapshotCorrupt, k, t, term, c)
		}
		for _, v := range p[:c] {
			if v == 0 {
				return nil, fmt.Errorf("%w: trace value 0", ErrSnapshotCorrupt)
			}
			out = append(out, trace.Entry{Term: int(t), Value: int(v)})
		}
		term, p = t, p[c:]
	}
	if len(p) != 0 || uint64(len(out)) != index {
		return nil, fmt.Errorf("%w: trace prefix of %d entries (%d bytes left) for index %d", ErrSnapshotCorrupt, len(out), len(p), index)
	}
	return out, nil
}

func isZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// blockSum is a block's checksum: of its number and its bytes, so that a
// block in the wrong place does not verify.
func blockSum(k uint64, data []byte) uint32 {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], k)
	return crc32.Update(crc32.Checksum(n[:], snapCastagnoli), snapCastagnoli, data)
}

// snapTrailer is the trailer's content.
type snapTrailer struct {
	bodyBytes, blocks uint64
	sum               uint32
}

func (t snapTrailer) encode() []byte {
	b := make([]byte, snapTrailerBytes)
	copy(b, snapTrailerMagic)
	binary.LittleEndian.PutUint64(b[8:], t.bodyBytes)
	binary.LittleEndian.PutUint64(b[16:], t.blocks)
	binary.LittleEndian.PutUint32(b[24:], t.sum)
	return b
}

func decodeSnapTrailer(b []byte) (snapTrailer, error) {
	var t snapTrailer
	if len(b) != snapTrailerBytes || string(b[:8]) != snapTrailerMagic || !isZeroBytes(b[28:]) {
		return t, fmt.Errorf("%w: bad trailer", ErrSnapshotCorrupt)
	}
	t.bodyBytes, t.blocks, t.sum = binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint32(b[24:])
	return t, nil
}

// snapLayout is where the parts of a file lie.
type snapLayout struct {
	headerBytes, blockBytes int
	trailer                 snapTrailer
}

func (l snapLayout) blockOffset(k uint64) int64 {
	return int64(l.headerBytes) + int64(k)*int64(snapFrameBytes+l.blockBytes)
}

func (l snapLayout) blockLen(k uint64) int {
	if k+1 < l.trailer.blocks {
		return l.blockBytes
	}
	return int(l.trailer.bodyBytes - k*uint64(l.blockBytes))
}

func (l snapLayout) size() int64 {
	return int64(l.headerBytes) + int64(l.trailer.bodyBytes) + int64(snapFrameBytes)*int64(l.trailer.blocks) + snapTrailerBytes
}

// snapWriter writes the body of a snapshot file as a stream, one block at
// a time, then the trailer; the header is written first. Memory: one block.
type snapWriter struct {
	f         vfs.File
	off       int64
	hdrSum    uint32
	block     []byte
	blockSize int
	k         uint64
	body      uint64
	sum       uint32 // running checksum of the header's and the blocks' checksums
	err       error
}

func newSnapWriter(f vfs.File, header []byte, blockBytes int) *snapWriter {
	w := &snapWriter{f: f, blockSize: blockBytes, block: make([]byte, 0, snapFrameBytes+blockBytes)}
	w.hdrSum = binary.LittleEndian.Uint32(header)
	w.sum = crc32.Update(0, snapCastagnoli, header[:4])
	w.writeAt(header)
	return w
}

func (w *snapWriter) writeAt(p []byte) {
	if w.err != nil {
		return
	}
	_, w.err = w.f.WriteAt(p, w.off)
	w.off += int64(len(p))
}

// Write implements io.Writer for the state machine's stream.
func (w *snapWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && w.err == nil {
		if len(w.block) == 0 {
			w.block = w.block[:snapFrameBytes]
		}
		k := min(len(p), snapFrameBytes+w.blockSize-len(w.block))
		w.block = append(w.block, p[:k]...)
		p = p[k:]
		if len(w.block) == snapFrameBytes+w.blockSize {
			w.flushBlock()
		}
	}
	if w.err != nil {
		return n - len(p), w.err
	}
	return n, nil
}

func (w *snapWriter) flushBlock() {
	data := w.block[snapFrameBytes:]
	s := blockSum(w.k, data)
	binary.LittleEndian.PutUint32(w.block, s)
	var sb [4]byte
	binary.LittleEndian.PutUint32(sb[:], s)
	w.sum = crc32.Update(w.sum, snapCastagnoli, sb[:])
	w.writeAt(w.block)
	w.body += uint64(len(data))
	w.k++
	w.block = w.block[:0]
}

// finish writes the last block and the trailer.
func (w *snapWriter) finish() (int64, error) {
	if len(w.block) > snapFrameBytes {
		w.flushBlock()
	}
	t := snapTrailer{bodyBytes: w.body, blocks: w.k}
	b := t.encode()
	t.sum = crc32.Update(w.sum, snapCastagnoli, b[:24])
	w.writeAt(t.encode())
	return w.off, w.err
}

// openSnap reads and verifies a snapshot file's header and trailer and its
// size; the blocks are verified as they are read (snapReader, verifySnap).
func openSnap(f vfs.File) (SnapshotMeta, snapLayout, error) {
	var meta SnapshotMeta
	var l snapLayout
	size, err := f.Size()
	if err != nil {
		return meta, l, err
	}
	if size < snapHeaderFixed+snapTrailerBytes {
		return meta, l, fmt.Errorf("%w: file of %d bytes", ErrSnapshotCorrupt, size)
	}
	fixed := make([]byte, snapHeaderFixed)
	if err := readFull(f, fixed, 0); err != nil {
		return meta, l, err
	}
	n, err := headerBytesOf(fixed)
	if err != nil {
		return meta, l, err
	}
	if int64(n)+snapTrailerBytes > size {
		return meta, l, fmt.Errorf("%w: header of %d bytes in a file of %d", ErrSnapshotCorrupt, n, size)
	}
	hdr := make([]byte, n)
	if err := readFull(f, hdr, 0); err != nil {
		return meta, l, err
	}
	if meta, err = decodeSnapHeader(hdr); err != nil {
		return meta, l, err
	}
	tb := make([]byte, snapTrailerBytes)
	if err := readFull(f, tb, size-snapTrailerBytes); err != nil {
		return meta, l, err
	}
	t, err := decodeSnapTrailer(tb)
	if err != nil {
		return meta, l, err
	}
	l = snapLayout{headerBytes: n, blockBytes: meta.BlockBytes, trailer: t}
	wantBlocks := (t.bodyBytes + uint64(meta.BlockBytes) - 1) / uint64(meta.BlockBytes)
	if t.blocks != wantBlocks || t.bodyBytes > uint64(size) || l.size() != size {
		return meta, l, fmt.Errorf("%w: %d body bytes in %d blocks of %d, file of %d bytes", ErrSnapshotCorrupt,
			t.bodyBytes, t.blocks, meta.BlockBytes, size)
	}
	return meta, l, nil
}

// readFull reads len(p) bytes at off; a short read is ErrSnapshotCorrupt.
func readFull(f vfs.File, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %d of %d bytes at offset %d", ErrSnapshotCorrupt, n, len(p), off)
	}
	return err
}

// snapReader streams a snapshot file's body, verifying each block before
// it hands out any byte of it, and the trailer's checksum at the end: an
// error (ErrSnapshotCorrupt) comes before any damaged byte.
type snapReader struct {
	f     vfs.File
	l     snapLayout
	k     uint64
	buf   []byte
	avail []byte
	sum   uint32
	err   error
}

func newSnapReader(f vfs.File, l snapLayout, hdrSum uint32) *snapReader {
	var sb [4]byte
	binary.LittleEndian.PutUint32(sb[:], hdrSum)
	return &snapReader{f: f, l: l, buf: make([]byte, snapFrameBytes+l.blockBytes), sum: crc32.Checksum(sb[:], snapCastagnoli)}
}

func (r *snapReader) Read(p []byte) (int, error) {
	for len(r.avail) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.next()
	}
	n := copy(p, r.avail)
	r.avail = r.avail[n:]
	return n, nil
}

// next reads and verifies block k, or at the end the trailer's checksum.
func (r *snapReader) next() {
	if r.k == r.l.trailer.blocks {
		b := r.l.trailer.encode()
		if got := crc32.Update(r.sum, snapCastagnoli, b[:24]); got != r.l.trailer.sum {
			r.err = fmt.Errorf("%w: trailer checksum %08x, computed %08x", ErrSnapshotCorrupt, r.l.trailer.sum, got)
			return
		}
		r.err = io.EOF
		return
	}
	n := r.l.blockLen(r.k)
	frame := r.buf[:snapFrameBytes+n]
	if err := readFull(r.f, frame, r.l.blockOffset(r.k)); err != nil {
		r.err = err
		return
	}
	want := binary.LittleEndian.Uint32(frame)
	if got := blockSum(r.k, frame[snapFrameBytes:]); got != want {
		r.err = fmt.Errorf("%w: block %d (offset %d): checksum %08x, computed %08x", ErrSnapshotCorrupt, r.k, r.l.blockOffset(r.k), want, got)
		return
	}
	r.sum = crc32.Update(r.sum, snapCastagnoli, frame[:snapFrameBytes])
	r.avail = frame[snapFrameBytes:]
	r.k++
}

// verifySnap reads a whole snapshot file and verifies every part of it.
func verifySnap(f vfs.File) (SnapshotMeta, error) {
	meta, l, err := openSnap(f)
	if err != nil {
		return meta, err
	}
	hdrSum, err := headerSum(f)
	if err != nil {
		return meta, err
	}
	r := newSnapReader(f, l, hdrSum)
	buf := make([]byte, 32<<10)
	for {
		if _, err := r.Read(buf); err != nil {
			if errors.Is(err, io.EOF) {
				return meta, nil
			}
			return meta, err
		}
	}
}

func headerSum(f vfs.File) (uint32, error) {
	var b [4]byte
	if err := readFull(f, b[:], 0); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}
