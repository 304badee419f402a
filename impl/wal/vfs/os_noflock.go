//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package vfs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Without flock, the lock only excludes other owners in this process.
var (
	processLocksMu sync.Mutex
	processLocks   = map[string]bool{}
)

type processLock struct {
	*os.File
	path string
}

func (l processLock) Close() error {
	processLocksMu.Lock()
	delete(processLocks, l.path)
	processLocksMu.Unlock()
	return l.File.Close()
}

// lockFile registers f's path; closing the returned lock releases it.
func lockFile(f *os.File) (io.Closer, error) {
	abs, err := filepath.Abs(f.Name())
	if err != nil {
		return nil, err
	}
	processLocksMu.Lock()
	defer processLocksMu.Unlock()
	if processLocks[abs] {
		return nil, fmt.Errorf("lock %s: %w", f.Name(), ErrLocked)
	}
	processLocks[abs] = true
	return processLock{File: f, path: abs}, nil
}
