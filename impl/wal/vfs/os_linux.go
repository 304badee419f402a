//go:build linux

package vfs

import (
	"errors"
	"os"
	"syscall"
)

// fdatasync flushes the file's data and the metadata needed to read it back.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
		}
		return nil
	}
}

// preallocate reserves size bytes with fallocate, so that ENOSPC shows up here and
// not at an arbitrary later write; file systems without fallocate fall back to
// extending the size.
func preallocate(f *os.File, size int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
		if err == syscall.EINTR {
			continue
		}
		if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
			return extend(f, size)
		}
		if err != nil {
			return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
		}
		return nil
	}
}
