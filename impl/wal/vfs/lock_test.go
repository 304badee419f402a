package vfs

import (
	"errors"
	"path/filepath"
	"testing"
)

// Both file systems: a second Lock of a held name fails with ErrLocked, a released name
// can be locked again, and other names are independent.
func TestLockExcludesSecondOwner(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		fs   FS
		dir  string
	}{
		{"os", OS{}, dir},
		{"mem", newDisk(t, MemConfig{Seed: 1}), "/d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := filepath.Join(tc.dir, "LOCK")
			first, err := tc.fs.Lock(a)
			mustNil(t, err)
			if _, err := tc.fs.Lock(a); !errors.Is(err, ErrLocked) {
				t.Fatalf("second lock of a held name: got %v, want ErrLocked", err)
			}
			other, err := tc.fs.Lock(filepath.Join(tc.dir, "OTHER"))
			mustNil(t, err)
			mustNil(t, other.Close())
			mustNil(t, first.Close())
			again, err := tc.fs.Lock(a)
			mustNil(t, err)
			mustNil(t, again.Close())
		})
	}
}

// A crash is the death of the process that held the lock: after Restart the name can
// be locked again, and the dead holder's Close does not release the new holder's lock.
func TestMemCrashReleasesLocks(t *testing.T) {
	m := newDisk(t, MemConfig{Seed: 2})
	dead, err := m.Lock("/d/LOCK")
	mustNil(t, err)
	m.Crash()
	if _, err := m.Lock("/d/LOCK"); !errors.Is(err, ErrCrashed) {
		t.Fatalf("lock on a crashed disk: got %v, want ErrCrashed", err)
	}
	m.Restart()
	alive, err := m.Lock("/d/LOCK")
	mustNil(t, err)
	mustNil(t, dead.Close())
	if _, err := m.Lock("/d/LOCK"); !errors.Is(err, ErrLocked) {
		t.Fatalf("the dead holder's Close released the live lock: got %v", err)
	}
	mustNil(t, alive.Close())
}
