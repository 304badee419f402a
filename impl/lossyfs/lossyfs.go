package lossyfs

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

const pageBytes = 4096

// FS is the lossy file system over the operating system's.
type FS struct {
	vfs.OS
	// Pending counts the bytes written and not yet synced, over all files;
	// Syncs counts fdatasyncs.
	Pending, Syncs atomic.Int64
	// SyncLatency makes every fdatasync take at least this long, as a slow
	// device does (tests that must land a kill inside a sync).
	SyncLatency time.Duration
	// FailSyncFile, when set, names a file whose existence makes every
	// fdatasync fail with EIO, writing nothing out (a failing disk that a
	// test turns on and off from outside the process); SyncFailures counts
	// them.
	FailSyncFile string
	SyncFailures atomic.Int64
}

var _ vfs.FS = (*FS)(nil)

// New returns the file system.
func New() *FS { return &FS{} }

// Create implements vfs.FS.
func (l *FS) Create(name string) (vfs.File, error) {
	f, err := l.OS.Create(name)
	if err != nil {
		return nil, err
	}
	return &file{fs: l, f: f, pages: map[int64][]byte{}}, nil
}

// Open implements vfs.FS.
func (l *FS) Open(name string) (vfs.File, error) {
	f, err := l.OS.Open(name)
	if err != nil {
		return nil, err
	}
	size, err := f.Size()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &file{fs: l, f: f, pages: map[int64][]byte{}, size: size}, nil
}

// file holds unsynced writes in pages over the file on disk.
//
// Invariants: size >= the size on disk; every page key k has k*pageBytes <
// size; bytes of a page at or beyond size are zero.
type file struct {
	fs    *FS
	mu    sync.Mutex
	f     vfs.File
	pages map[int64][]byte
	size  int64
}

// page returns the page holding offset k*pageBytes, loading it from disk.
func (f *file) page(k int64) ([]byte, error) {
	if p, ok := f.pages[k]; ok {
		return p, nil
	}
	p := make([]byte, pageBytes)
	n, err := f.f.ReadAt(p, k*pageBytes)
	if err != nil && err != io.EOF {
		return nil, err
	}
	clear(p[n:])
	f.pages[k] = p
	return p, nil
}

func (f *file) WriteAt(b []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	done := 0
	for done < len(b) {
		at := off + int64(done)
		p, err := f.page(at / pageBytes)
		if err != nil {
			return done, err
		}
		done += copy(p[at%pageBytes:], b[done:])
	}
	f.size = max(f.size, off+int64(len(b)))
	f.fs.Pending.Add(int64(len(b)))
	return len(b), nil
}

func (f *file) ReadAt(b []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if off >= f.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(b)), f.size-off))
	m, err := f.f.ReadAt(b[:n], off)
	if err != nil && err != io.EOF {
		return m, err
	}
	clear(b[m:n])
	for k := off / pageBytes; k*pageBytes < off+int64(n); k++ {
		p, ok := f.pages[k]
		if !ok {
			continue
		}
		start := max(k*pageBytes, off)
		end := min((k+1)*pageBytes, off+int64(n))
		copy(b[start-off:end-off], p[start-k*pageBytes:end-k*pageBytes])
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// flush writes the pages out (without a sync) and drops them.
func (f *file) flush() error {
	for k, p := range f.pages {
		end := min(int64(pageBytes), f.size-k*pageBytes)
		if end > 0 {
			if _, err := f.f.WriteAt(p[:end], k*pageBytes); err != nil {
				return err
			}
		}
		delete(f.pages, k)
	}
	f.fs.Pending.Store(0)
	return nil
}

func (f *file) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d := f.fs.SyncLatency; d > 0 {
		// The device's latency, modelled: the data reaches the real file
		// (and a kill -9 can no longer lose it) only after it.
		t := time.NewTimer(d)
		<-t.C
	}
	if name := f.fs.FailSyncFile; name != "" {
		if _, err := os.Stat(name); err == nil {
			f.fs.SyncFailures.Add(1)
			return fmt.Errorf("lossyfs: fdatasync failed (%s exists): %w", name, syscall.EIO)
		}
	}
	if err := f.flush(); err != nil {
		return err
	}
	f.fs.Syncs.Add(1)
	return f.f.Sync()
}

func (f *file) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.f.Truncate(size); err != nil {
		return err
	}
	for k, p := range f.pages {
		switch {
		case k*pageBytes >= size:
			delete(f.pages, k)
		case (k+1)*pageBytes > size:
			clear(p[size-k*pageBytes:])
		}
	}
	f.size = size
	return nil
}

func (f *file) Preallocate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.f.Preallocate(size); err != nil {
		return err
	}
	onDisk, err := f.f.Size()
	if err != nil {
		return err
	}
	f.size = max(f.size, onDisk)
	return nil
}

func (f *file) Size() (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.size, nil
}

func (f *file) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.flush()
	if errClose := f.f.Close(); err == nil {
		err = errClose
	}
	return err
}
