package wal

import (
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
}

func (f *writeCountFS) Create(name string) (vfs.File, error) {
	fl, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &writeCountFile{File: fl, fs: f, name: name}, nil
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
	fs := &writeCountFS{FS: vfs.NewMemFS(vfs.MemConfig{Seed: 1}), written: map[string]int64{}, synced: map[string]int64{}}
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
