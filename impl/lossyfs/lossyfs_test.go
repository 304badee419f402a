package lossyfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// TestUnsyncedWritesStayInMemory: the process reads what it wrote; the
// disk holds only what was synced.
func TestUnsyncedWritesStayInMemory(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	fs := New()
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("synced"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("-unsynced"), 6); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), 5000); err != nil { // a second page, across a hole
		t.Fatal(err)
	}
	got := make([]byte, 5001)
	if n, err := f.ReadAt(got, 0); n != 5001 || (err != nil && err != io.EOF) {
		t.Fatalf("read %d %v", n, err)
	}
	if !bytes.HasPrefix(got, []byte("synced-unsynced\x00")) || got[5000] != 'X' {
		t.Fatalf("the process does not read what it wrote: %q", got[:20])
	}
	if size, _ := f.Size(); size != 5001 {
		t.Fatalf("size %d", size)
	}
	onDisk, err := os.ReadFile(name)
	if err != nil || string(onDisk) != "synced" {
		t.Fatalf("disk holds %q (%v), want only the synced bytes", onDisk, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	onDisk, _ = os.ReadFile(name)
	if len(onDisk) != 5001 || !bytes.Equal(onDisk, got) {
		t.Fatalf("after Sync the disk holds %d bytes", len(onDisk))
	}
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if n, err := f.ReadAt(got[:10], 0); n != 3 || err != io.EOF || string(got[:3]) != "syn" {
		t.Fatalf("after truncate: %d %v %q", n, err, got[:n])
	}
	f.Close()
}

// gatedFS holds every Sync while closed is set, so that a test can look at
// the disk between a WAL's write and its fdatasync.
type gatedFS struct {
	vfs.FS
	hold    atomic.Bool
	gate    chan struct{}
	entered chan struct{} // rung when a held Sync begins
}

type gatedFile struct {
	vfs.File
	g *gatedFS
}

func (g *gatedFS) Create(name string) (vfs.File, error) {
	f, err := g.FS.Create(name)
	return g.wrap(f, err)
}
func (g *gatedFS) Open(name string) (vfs.File, error) {
	f, err := g.FS.Open(name)
	return g.wrap(f, err)
}
func (g *gatedFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &gatedFile{File: f, g: g}, nil
}

func (f *gatedFile) Sync() error {
	if f.g.hold.Load() {
		select {
		case f.g.entered <- struct{}{}:
		default:
		}
		<-f.g.gate
	}
	return f.File.Sync()
}

// TestWALLosesUnsyncedOnKill: a WAL on the lossy disk has written a record
// and not yet synced it; a copy of the directory taken then (what a kill
// leaves) recovers only what was synced. On the OS file system the same
// copy holds the record (the page cache): the test fails with vfs.OS.
func TestWALLosesUnsyncedOnKill(t *testing.T) {
	for _, c := range []struct {
		name string
		fs   vfs.FS
		want uint64
	}{{"lossy", New(), 1}, {"os", vfs.OS{}, 2}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			g := &gatedFS{FS: c.fs, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
			w, _, err := wal.Open(g, dir, wal.Options{SealDelay: -1})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Append([]wal.Entry{{Index: 1, Term: 1, Data: []byte("a")}}); err != nil {
				t.Fatal(err)
			}
			if err := w.Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			g.hold.Store(true)
			if err := w.Append([]wal.Entry{{Index: 2, Term: 1, Data: []byte("b")}}); err != nil {
				t.Fatal(err)
			}
			w.SubmitSync()
			// Wait until the flusher has written the batch and entered its Sync.
			select {
			case <-g.entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the WAL never synced")
			}
			copyDir := t.TempDir()
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.Name() == "LOCK" {
					continue
				}
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(copyDir, e.Name()), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			g.hold.Store(false)
			close(g.gate)
			w.Close()
			w2, rec, err := wal.Open(vfs.OS{}, copyDir, wal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer w2.Close()
			if rec.IndexLast != c.want {
				t.Fatalf("recovered through %d (%v), want %d", rec.IndexLast, rec.Verdict, c.want)
			}
		})
	}
}

// TestFailSyncFile: while the named file exists every Sync fails with EIO
// and nothing reaches the disk; once it is gone syncs succeed again.
func TestFailSyncFile(t *testing.T) {
	dir := t.TempDir()
	name, trigger := filepath.Join(dir, "f"), filepath.Join(dir, "eio")
	fs := New()
	fs.FailSyncFile = trigger
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("a"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("sync without the trigger: %v", err)
	}
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("b"), 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync with the trigger: %v, want EIO", err)
	}
	if b, _ := os.ReadFile(name); string(b) != "a" || fs.SyncFailures.Load() != 1 {
		t.Fatalf("disk %q after a failed sync, %d failures", b, fs.SyncFailures.Load())
	}
	if err := os.Remove(trigger); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("sync after the trigger is gone: %v", err)
	}
	if b, _ := os.ReadFile(name); string(b) != "ab" {
		t.Fatalf("disk %q", b)
	}
}
