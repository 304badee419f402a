package wal

import (
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
