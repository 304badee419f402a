package vfs

import (
	"fmt"
	"io"
	"io/fs"
)

// Lock implements FS. The lock lives in the process, not on the disk: it touches no
// file (so it counts no operation for CrashAtOp) and a Crash releases every lock, as
// the death of the process that held them would.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: ErrCrashed}
	}
	if m.locks == nil {
		m.locks = map[string]*memLock{}
	}
	if held := m.locks[name]; held != nil && held.life == m.life {
		return nil, fmt.Errorf("lock %s: %w", name, ErrLocked)
	}
	l := &memLock{fs: m, name: name, life: m.life}
	m.locks[name] = l
	return l, nil
}

// memLock is one holder of a MemFS lock.
type memLock struct {
	fs   *MemFS
	name string
	life uint64
}

// Close releases the lock if this holder still has it; a holder from before a crash
// has nothing left to release.
func (l *memLock) Close() error {
	m := l.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks[l.name] == l {
		delete(m.locks, l.name)
	}
	return nil
}
