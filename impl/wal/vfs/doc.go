// Package vfs is the file-system interface under the write-ahead log, with two
// implementations: [OS], the operating system, and [MemFS], an in-memory disk that
// fails on purpose, driven by a seed.
//
// # Interface
//
// [FS] and [File] are the few operations a log needs: create and open, write and read at
// an offset, fdatasync, truncate, preallocate, rename, sync a directory, list and remove,
// and an exclusive lock so that two owners never use one directory.
// Paths use forward slashes and are cleaned with [path.Clean] by MemFS; OS passes them to
// the operating system unchanged.
//
// # Durability model
//
// A write is on stable storage only after a successful [File.Sync] of that file. A name
// (create, rename, remove) is on stable storage only after a successful [FS.SyncDir] of
// its directory. After a failed Sync nothing written since the previous successful Sync
// may be assumed on disk, even if a later Sync reports success (Linux marks the failed
// pages clean). MemFS implements exactly this model and nothing kinder; see its type
// documentation for the faults it injects.
package vfs
