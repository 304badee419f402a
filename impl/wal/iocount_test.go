package wal

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// writeCountFS counts the bytes written through WriteAt to each file it creates, and
// how many of them an fdatasync had covered at its last Sync.
type writeCountFS struct {
	vfs.FS
	mu      sync.Mutex
	written map[string]int64
	synced  map[string]int64
	calls   map[string]int // WriteAt calls
	reads   int            // ReadAt calls, all files
	readN   int64          // bytes asked for by ReadAt, all files
}

func (f *writeCountFS) Create(name string) (vfs.File, error) {
	fl, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &writeCountFile{File: fl, fs: f, name: name}, nil
}

func (f *writeCountFS) Open(name string) (vfs.File, error) {
	fl, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &writeCountFile{File: fl, fs: f, name: name}, nil
}

func newWriteCountFS() *writeCountFS {
	return &writeCountFS{FS: vfs.NewMemFS(vfs.MemConfig{Seed: 1}), written: map[string]int64{}, synced: map[string]int64{}, calls: map[string]int{}}
}

// hardStateWrites is the number of slot writes made to the hard-state file so far
// (through its temporary name at creation, or its own).
func (f *writeCountFS) hardStateWrites() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for name, c := range f.calls {
		if strings.HasPrefix(filepath.Base(name), hardStateName) {
			n += c
		}
	}
	return n
}

type writeCountFile struct {
	vfs.File
	fs   *writeCountFS
	name string
}

func (f *writeCountFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.fs.mu.Lock()
	f.fs.written[f.name] += int64(n)
	f.fs.calls[f.name]++
	f.fs.mu.Unlock()
	return n, err
}

func (f *writeCountFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	f.fs.reads++
	f.fs.readN += int64(len(p))
	f.fs.mu.Unlock()
	return f.File.ReadAt(p, off)
}

func (f *writeCountFile) Sync() error {
	err := f.File.Sync()
	if err == nil {
		f.fs.mu.Lock()
		f.fs.synced[f.name] = f.fs.written[f.name]
		f.fs.mu.Unlock()
	}
	return err
}

// A spare segment file is written in full (zero-filled) and fdatasync'd before it is
// offered, not only preallocated: the point of a spare (prepareSpare) is that rotation
// neither waits for a zero fill nor writes into fallocated blocks, and that the
// segment's first fdatasync does not pay for writing back the fill.
func TestSpareIsZeroFilled(t *testing.T) {
	fs := newWriteCountFS()
	opts := manual(smallOptions())
	w, _ := mustOpen(t, fs, opts)
	defer w.Close()
	name := segmentFileName(prefixSpare, 99)
	if err := w.makeSpare(name); err != nil {
		t.Fatal(err)
	}
	path := segPath(name)
	if got := fs.written[path]; got < opts.SegmentBytes {
		t.Fatalf("spare %s: %d bytes written, want the whole file (%d)", name, got, opts.SegmentBytes)
	}
	if fs.synced[path] != fs.written[path] {
		t.Fatalf("spare %s: %d bytes written, %d of them fdatasync'd", name, fs.written[path], fs.synced[path])
	}
}

// Hard-state updates queued before a flush are written once, the last of them, to
// each slot: one pair of slot writes, not one per update.
func TestHardStateUpdatesCoalesce(t *testing.T) {
	fs := newWriteCountFS()
	w, _ := mustOpen(t, fs, manual(smallOptions()))
	defer w.Close()
	before := fs.hardStateWrites()
	last := HardState{Term: 4, Vote: 2}
	for _, hs := range []HardState{{Term: 2, Vote: 1}, {Term: 3}, last} {
		if _, err := w.SubmitHardState(hs); err != nil {
			t.Fatal(err)
		}
	}
	for w.flushOnce() {
	}
	if got := fs.hardStateWrites() - before; got != 2 || w.HardState() != last {
		t.Fatalf("three queued updates: %d slot writes, hard state %+v; want 2 writes of %+v", got, w.HardState(), last)
	}
}

// failReadFS fails every ReadAt of the files it opens whose base name has the prefix,
// at offsets from off on.
type failReadFS struct {
	vfs.FS
	prefix string
	off    int64
}

type failReadFile struct {
	vfs.File
	fail bool
	off  int64
}

func (f *failReadFS) Open(name string) (vfs.File, error) {
	fl, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &failReadFile{File: fl, fail: strings.HasPrefix(filepath.Base(name), f.prefix), off: f.off}, nil
}

func (f *failReadFile) ReadAt(p []byte, off int64) (int, error) {
	if f.fail && off+int64(len(p)) > f.off {
		return 0, errors.New("injected read error")
	}
	return f.File.ReadAt(p, off)
}

// An Open whose reads of the hard state (either copy) or of a segment fail with an
// I/O error (not a checksum failure: nothing says what the bytes are) fails, with the
// error, instead of deciding on what it could not read.
func TestOpenReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix string
		off    int64
	}{
		{"hard state copy A", hardStateName, 0},
		{"hard state copy B", hardStateName, hardStateSlotB},
		{"segment header", prefixSegment, 0},
		{"segment body", prefixSegment, segmentHeaderBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
			opts := manual(smallOptions())
			w, _ := mustOpen(t, mem, opts)
			fill(t, w, 20)
			_ = w.Close()
			if w, _, err := Open(&failReadFS{FS: mem, prefix: tc.prefix, off: tc.off}, testDir, opts); err == nil {
				_ = w.Close()
				t.Fatal("open succeeded over a read error")
			}
			w, rec := mustOpen(t, mem, opts)
			defer w.Close()
			if rec.Verdict != Clean || rec.IndexLast != 20 {
				t.Fatalf("after the failed open: %+v", rec)
			}
		})
	}
}

// A record read back that verifies but is not the one the WAL holds at that index
// (another index, term or checksum: a misdirected read or write) is ErrCorrupt.
func TestVerifyItemMismatch(t *testing.T) {
	e := Entry{Index: 6, Term: 2, Data: []byte("six")}
	r, sum := EncodeRecord(0x77, e)
	good := readItem{index: 6, meta: entryMeta{term: 2, checksum: sum}, checksumPrev: 0x77}
	if got, err := verifyItem(r, good); err != nil || got.Index != 6 || string(got.Data) != "six" {
		t.Fatalf("the right record: %+v %v", got, err)
	}
	for name, edit := range map[string]func(it *readItem){
		"index":    func(it *readItem) { it.index = 7 },
		"term":     func(it *readItem) { it.meta.term = 3 },
		"checksum": func(it *readItem) { it.meta.checksum ^= 1 },
		"chain":    func(it *readItem) { it.checksumPrev ^= 1 },
	} {
		it := good
		edit(&it)
		if _, err := verifyItem(r, it); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s differs: %v, want ErrCorrupt", name, err)
		}
	}
}

// Segments a reset drops are released together (one directory sync at the end), and
// every file renamed free-* for reuse is in the free list: none is left on disk
// unlisted.
func TestResetReleasesIntoFreeList(t *testing.T) {
	mem := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	opts := manual(smallOptions())
	opts.RecycleMax = 16
	w, _ := mustOpen(t, mem, opts)
	defer w.Close()
	fill(t, w, 60)
	segs := len(listFiles(t, mem, prefixSegment))
	if segs < 3 {
		t.Fatalf("set-up: %d segments", segs)
	}
	if err := w.Reset(100, 3); err != nil {
		t.Fatal(err)
	}
	for w.flushOnce() {
	}
	onDisk := listFiles(t, mem, prefixFree)
	w.ioMu.Lock()
	free := append([]string(nil), w.free...)
	w.ioMu.Unlock()
	if len(onDisk) < segs-1 || len(onDisk) != len(free) {
		t.Fatalf("after a reset over %d segments: free files on disk %v, free list %v", segs, onDisk, free)
	}
}

// A read from the segments takes one ReadAt per run of records contiguous in one
// segment, of exactly their bytes: records of two batches (a batch header between
// them) are two reads, not one read over the header.
func TestReadRunsAreContiguous(t *testing.T) {
	fs := newWriteCountFS()
	opts := manual(smallOptions())
	opts.TailCacheBytes = 1 // nothing stays cached: every read goes to the segments
	w, _ := mustOpen(t, fs, opts)
	defer w.Close()
	fill(t, w, 8) // two batches of four records
	fs.mu.Lock()
	reads, readN := fs.reads, fs.readN
	fs.mu.Unlock()
	ents := mustEntries(t, w, 1, 9)
	var want int64
	for _, e := range ents {
		want += int64(recordHeaderBytes + len(e.Data))
	}
	fs.mu.Lock()
	gotReads, gotN := fs.reads-reads, fs.readN-readN
	fs.mu.Unlock()
	if len(ents) != 8 || gotReads != 2 || gotN != want {
		t.Fatalf("entries 1..8 of two batches: %d entries in %d reads of %d bytes; want 8 in 2 reads of %d", len(ents), gotReads, gotN, want)
	}
}
