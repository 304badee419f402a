package vfs

import (
	"errors"
	"io"
	"io/fs"
)

// FS is the file system the log runs on (the "VFS").
type FS interface {
	// Create creates name, or truncates it to zero bytes if it exists, and opens it for
	// reading and writing.
	Create(name string) (File, error)
	// Open opens an existing file for reading and writing.
	Open(name string) (File, error)
	// Remove removes a file.
	Remove(name string) error
	// Rename renames oldName to newName, replacing newName if it exists.
	Rename(oldName, newName string) error
	// List returns the base names of the files in dir, sorted.
	List(dir string) ([]string, error)
	// SyncDir makes the directory's entries (creates, renames, removes) durable.
	SyncDir(dir string) error
	// MkdirAll creates dir and its parents if they do not exist.
	MkdirAll(dir string) error
	// Lock takes an exclusive lock on name, creating the file if it does not exist, so
	// that two owners never use one directory at once. It fails at once with an error
	// wrapping ErrLocked if another owner (another process, or another Lock in this one)
	// holds it. The lock is released by Close, or when the process dies.
	Lock(name string) (io.Closer, error)
}

// File is an open file.
type File interface {
	// ReadAt reads len(p) bytes at off. Fewer bytes come with io.EOF at the end of file.
	ReadAt(p []byte, off int64) (int, error)
	// WriteAt writes p at off, extending the file if needed.
	WriteAt(p []byte, off int64) (int, error)
	// Sync makes the file's data durable (fdatasync).
	Sync() error
	// Truncate sets the file's size.
	Truncate(size int64) error
	// Preallocate reserves space so that the file holds at least size bytes, reading as
	// zeros where nothing was written; it fails with ENOSPC when the disk is full.
	Preallocate(size int64) error
	// Size returns the file's current size.
	Size() (int64, error)
	// Close closes the file.
	Close() error
}

// ErrCrashed is returned by MemFS for a handle opened before a crash, or for the
// operation at which a scheduled crash happened.
var ErrCrashed = errors.New("vfs: disk crashed")

// ErrLocked is returned by Lock when another owner holds the lock.
var ErrLocked = errors.New("vfs: locked by another owner")

// ErrNotExist is fs.ErrNotExist, repeated here for callers of this package.
var ErrNotExist = fs.ErrNotExist
