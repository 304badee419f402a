package kv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"slices"
)

// The snapshot format (docs/kv.md, "Snapshot"): a header, one record per key
// in ascending byte order, one record per session in ascending id order, and
// a trailer whose CRC-32C covers every byte before it. Integers are little
// endian. Two stores in the same state write the same bytes.
const (
	snapshotMagic       = "DRKVSNAP"
	snapshotVersion     = 2
	snapshotHeaderBytes = 8 + 4 + 4 + 6*8
	keyRecordBytes      = 1 + 4 + 4 + 8
	sessionRecordBytes  = 1 + 4*8 + 4
	responseBytes       = 8 + 1 + 8 + 8
	trailerBytes        = 1 + 4
	// snapshotBufferBytes is the buffer on each side of the stream: with
	// one value (ValueBytesMax) and the sorted key list, it bounds the
	// memory a snapshot takes beyond the state itself.
	snapshotBufferBytes = 64 << 10

	recordKey     = 'K'
	recordSession = 'S'
	recordEnd     = 'E'
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapWriter checksums and buffers what it writes; the first error sticks.
type snapWriter struct {
	w   *bufio.Writer
	crc uint32
	n   int64
	err error
}

func (sw *snapWriter) write(p []byte) {
	if sw.err != nil {
		return
	}
	sw.crc = crc32.Update(sw.crc, castagnoli, p)
	var n int
	n, sw.err = sw.w.Write(p)
	sw.n += int64(n)
}

// Snapshot writes the whole state to w as a stream (it never holds the
// snapshot in memory: a 64 KiB buffer, and one sorted slice of the keys). It
// recomputes the state hash from what it writes and panics if that differs
// from the incremental one. The caller must not Apply until it returns.
func (st *Store) Snapshot(w io.Writer) error {
	sw := &snapWriter{w: bufio.NewWriterSize(w, snapshotBufferBytes)}
	b := make([]byte, 0, snapshotHeaderBytes)
	b = append(b, snapshotMagic...)
	b = le.AppendUint32(b, snapshotVersion)
	b = le.AppendUint32(b, 0)
	for _, v := range []uint64{st.appliedIndex, st.appliedTerm, st.clockMs, uint64(len(st.items)), uint64(len(st.sessions)), st.hash} {
		b = le.AppendUint64(b, v)
	}
	sw.write(b)

	x := newHasher()
	sum := x.clock(st.clockMs)
	for _, it := range st.sortedItems() {
		k := it.key
		b = append(b[:0], recordKey)
		b = le.AppendUint32(b, uint32(len(k)))
		b = le.AppendUint32(b, uint32(len(it.value)))
		b = le.AppendUint64(b, it.revision)
		sw.write(append(b, k...))
		sw.write(it.value)
		sum += hashItem(x, k, it.value, it.revision)
	}
	for _, s := range st.sortedSessions() {
		b = append(b[:0], recordSession)
		for _, v := range []uint64{s.id, s.timeoutMs, s.lastActiveMs, s.lowestUnacked} {
			b = le.AppendUint64(b, v)
		}
		sw.write(le.AppendUint32(b, uint32(len(s.responses))))
		sum += x.session(s)
		for _, r := range s.responses {
			b = le.AppendUint64(b[:0], r.seq)
			b = append(b, byte(r.code))
			b = le.AppendUint64(b, r.index)
			sw.write(le.AppendUint64(b, r.revision))
			sum += x.response(s.id, r)
		}
	}
	if sum != st.hash {
		violated("snapshot at %d: incremental hash %016x, written state hashes to %016x", st.appliedIndex, st.hash, sum)
	}
	sw.write([]byte{recordEnd})
	sw.write(le.AppendUint32(b[:0], sw.crc))
	if sw.err == nil {
		sw.err = sw.w.Flush()
	}
	if sw.err != nil {
		return fmt.Errorf("kv: snapshot at index %d: %w", st.appliedIndex, sw.err)
	}
	return nil
}

// snapReader reads exact byte counts and checksums them; the first error
// sticks, and a short stream is ErrBadSnapshot (truncated).
type snapReader struct {
	r   *bufio.Reader
	crc uint32
	off int64
	err error
}

func (sr *snapReader) read(p []byte, what string) []byte {
	if sr.err != nil {
		return nil
	}
	n, err := io.ReadFull(sr.r, p)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			sr.err = fmt.Errorf("%w: truncated in the %s at byte %d", ErrBadSnapshot, what, sr.off+int64(n))
		} else {
			sr.err = fmt.Errorf("%w: reading the %s at byte %d: %w", ErrBadSnapshot, what, sr.off+int64(n), err)
		}
		return nil
	}
	sr.crc = crc32.Update(sr.crc, castagnoli, p)
	sr.off += int64(n)
	return p
}

func (sr *snapReader) fail(format string, args ...any) {
	if sr.err == nil {
		sr.err = fmt.Errorf("%w: "+format, append([]any{ErrBadSnapshot}, args...)...)
	}
}

// Restore replaces the state with the snapshot read from r, which must hold
// exactly one snapshot (trailing bytes are damage). It refuses a damaged,
// truncated or inconsistent stream with an error wrapping ErrBadSnapshot,
// and leaves the store unchanged then; the new state is built aside and
// swapped in only once the checksum, the recomputed state hash and every
// invariant (Verify) hold.
func (st *Store) Restore(r io.Reader) error {
	fresh, err := readSnapshot(r)
	if err != nil {
		return err
	}
	st.adopt(fresh)
	return nil
}

func readSnapshot(r io.Reader) (*Store, error) {
	sr := &snapReader{r: bufio.NewReaderSize(r, snapshotBufferBytes)}
	h := sr.read(make([]byte, snapshotHeaderBytes), "header")
	if sr.err != nil {
		return nil, sr.err
	}
	if string(h[:8]) != snapshotMagic || le.Uint32(h[8:]) != snapshotVersion || le.Uint32(h[12:]) != 0 {
		return nil, fmt.Errorf("%w: not a version-%d KV snapshot (magic %q, version %d)", ErrBadSnapshot, snapshotVersion, h[:8], le.Uint32(h[8:]))
	}
	st := NewStore(Options{})
	st.appliedIndex, st.appliedTerm, st.clockMs = le.Uint64(h[16:]), le.Uint64(h[24:]), le.Uint64(h[32:])
	keys, sessions, hashWant := le.Uint64(h[40:]), le.Uint64(h[48:]), le.Uint64(h[56:])
	switch {
	case st.appliedIndex > RevisionMax || st.appliedTerm > RevisionMax || st.clockMs > TimeMsMax:
		sr.fail("applied index %d, term %d or clock %d over 2^62", st.appliedIndex, st.appliedTerm, st.clockMs)
	case keys > st.appliedIndex || sessions > SessionsMax:
		sr.fail("%d keys and %d sessions at applied index %d", keys, sessions, st.appliedIndex)
	}
	st.clockHash = st.hasher.clock(st.clockMs)
	st.hash = st.clockHash
	var prev []byte
	for i := uint64(0); i < keys && sr.err == nil; i++ {
		prev = readKey(sr, st, prev)
	}
	var prevID uint64
	for i := uint64(0); i < sessions && sr.err == nil; i++ {
		prevID = readSession(sr, st, prevID)
	}
	crcBefore := sr.crc
	t := sr.read(make([]byte, trailerBytes), "trailer")
	if sr.err == nil {
		// read checksummed the whole trailer: the CRC covers the tag, not itself.
		crcWant := crc32.Update(crcBefore, castagnoli, t[:1])
		switch {
		case t[0] != recordEnd:
			sr.fail("trailer tag %q at byte %d, want %q", t[0], sr.off-trailerBytes, recordEnd)
		case le.Uint32(t[1:]) != crcWant:
			sr.fail("checksum %08x, computed %08x", le.Uint32(t[1:]), crcWant)
		}
	}
	if sr.err == nil {
		if _, err := sr.r.ReadByte(); err == nil {
			sr.fail("bytes after the trailer at byte %d", sr.off)
		} else if !errors.Is(err, io.EOF) {
			sr.fail("reading past the trailer: %v", err)
		}
	}
	if sr.err != nil {
		return nil, sr.err
	}
	if st.hash != hashWant {
		return nil, fmt.Errorf("%w: state hashes to %016x, header says %016x", ErrBadSnapshot, st.hash, hashWant)
	}
	if err := st.Verify(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	return st, nil
}

// readKey reads one key record, which must sort after prev, and returns its key.
func readKey(sr *snapReader, st *Store, prev []byte) []byte {
	at := sr.off
	h := sr.read(make([]byte, keyRecordBytes), "key record")
	if sr.err != nil {
		return nil
	}
	nk, nv, rev := le.Uint32(h[1:]), le.Uint32(h[5:]), le.Uint64(h[9:])
	if h[0] != recordKey || nk < 1 || nk > KeyBytesMax || nv > ValueBytesMax || rev < 1 || rev > st.appliedIndex {
		sr.fail("key record at byte %d: tag %q, %d-byte key, %d-byte value, revision %d", at, h[0], nk, nv, rev)
		return nil
	}
	key := sr.read(make([]byte, nk), "key")
	value := sr.read(make([]byte, nv), "value")
	if sr.err != nil {
		return nil
	}
	if prev != nil && bytes.Compare(prev, key) >= 0 {
		sr.fail("key record at byte %d: keys out of order", at)
		return nil
	}
	it := item{value: value, revision: rev, hash: hashItem(st.hasher, key, value, rev)}
	st.items[string(key)] = it
	st.hash += it.hash
	return key
}

// readSession reads one session record, whose id must exceed prevID, and
// returns its id.
func readSession(sr *snapReader, st *Store, prevID uint64) uint64 {
	at := sr.off
	h := sr.read(make([]byte, sessionRecordBytes), "session record")
	if sr.err != nil {
		return 0
	}
	s := &session{id: le.Uint64(h[1:]), timeoutMs: le.Uint64(h[9:]), lastActiveMs: le.Uint64(h[17:]), lowestUnacked: le.Uint64(h[25:])}
	n := le.Uint32(h[33:])
	if h[0] != recordSession || s.id <= prevID || s.id > st.appliedIndex || s.timeoutMs < 1 || s.timeoutMs > SessionTimeoutMsMax ||
		s.lastActiveMs > st.clockMs || s.lowestUnacked < 1 || s.lowestUnacked > SeqMax || n > SessionWindowMax {
		sr.fail("session record at byte %d: tag %q, id %d after %d, timeout %d, last active %d, lowest unacked %d, %d responses",
			at, h[0], s.id, prevID, s.timeoutMs, s.lastActiveMs, s.lowestUnacked, n)
		return 0
	}
	buf := make([]byte, responseBytes)
	for i := uint32(0); i < n && sr.err == nil; i++ {
		b := sr.read(buf, "response")
		if sr.err != nil {
			break
		}
		r := response{seq: le.Uint64(b), code: Code(b[8]), index: le.Uint64(b[9:]), revision: le.Uint64(b[17:])}
		if (i > 0 && r.seq <= s.responses[i-1].seq) || r.seq < s.lowestUnacked || r.seq-s.lowestUnacked >= SessionWindowMax ||
			!r.code.Executed() || r.index <= s.id || r.index > st.appliedIndex || r.result().Validate() != nil {
			sr.fail("session %d: response %d at byte %d: seq %d, %v, index %d, revision %d", s.id, i, sr.off-responseBytes, r.seq, r.code, r.index, r.revision)
			break
		}
		s.responses = append(s.responses, r)
	}
	if sr.err != nil {
		return 0
	}
	if s.deadline() < st.clockMs {
		sr.fail("session %d expired (deadline %d) before the clock %d", s.id, s.deadline(), st.clockMs)
		return 0
	}
	st.addSession(s)
	return s.id
}

// Clone returns a copy of the store that shares nothing Apply or Restore
// changes: the other may go on applying while the copy writes a snapshot
// (replica.Snapshotter). Values are shared, as they are never modified;
// the cost is one copy of the key map (items are values, replaced whole by
// Apply) and a pass over the sessions. Stats start at zero.
func (st *Store) Clone() *Store {
	c := &Store{hasher: newHasher(), bugs: st.bugs,
		items: maps.Clone(st.items), sessions: make(map[uint64]*session, len(st.sessions)),
		appliedIndex: st.appliedIndex, appliedTerm: st.appliedTerm, clockMs: st.clockMs, clockHash: st.clockHash, hash: st.hash}
	c.expiry = make(expiryHeap, len(st.expiry))
	for k, s := range st.expiry {
		x := *s
		x.responses = slices.Clone(s.responses)
		c.sessions[x.id], c.expiry[k] = &x, &x
	}
	return c
}

// RestoreAt is Restore of a snapshot that must end at (index, term): a
// stream of another state is refused (ErrBadSnapshot) and the store is
// unchanged.
func (st *Store) RestoreAt(r io.Reader, index, term uint64) error {
	fresh, err := readSnapshot(r)
	if err != nil {
		return err
	}
	if fresh.appliedIndex != index || fresh.appliedTerm != term {
		return fmt.Errorf("%w: the stream holds the state at %d/%d, want %d/%d", ErrBadSnapshot,
			fresh.appliedTerm, fresh.appliedIndex, term, index)
	}
	st.adopt(fresh)
	return nil
}

func (st *Store) adopt(fresh *Store) {
	st.items, st.sessions, st.expiry = fresh.items, fresh.sessions, fresh.expiry
	st.appliedIndex, st.appliedTerm = fresh.appliedIndex, fresh.appliedTerm
	st.clockMs, st.clockHash, st.hash = fresh.clockMs, fresh.clockHash, fresh.hash
	st.stats.Restores++
}
