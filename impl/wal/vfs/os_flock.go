//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// lockFile takes flock(LOCK_EX|LOCK_NB) on f; closing f releases it.
func lockFile(f *os.File) (io.Closer, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return f, nil
		case err == syscall.EINTR:
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return nil, fmt.Errorf("flock %s: %w", f.Name(), ErrLocked)
		default:
			return nil, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
	}
}
