// Package lossyfs is a file system for tests of real processes: the
// operating system's, except that a write stays in the process's memory
// until the file's Sync (fdatasync) writes it out and syncs it. kill -9 of
// a process keeps the page cache, so a node that acknowledges data it has
// not synced passes a plain kill test; on this file system the kill loses
// every unsynced write, as a power loss would.
//
// raftd uses it only behind its test-only flag (--testing-lossy-fs), which
// it logs loudly and reports in /v1/status.
//
// # Model
//
//   - WriteAt goes to 4 KiB pages held in memory; ReadAt and Size see them
//     over the file's bytes on disk, so the process reads what it wrote.
//   - Sync writes the pages out, then fdatasyncs the file, then drops them.
//   - Names (Create, Rename, Remove), Truncate and Preallocate go to the
//     disk at once: the model loses data, not names. This is kinder than a
//     power loss for metadata, and no kinder for data, which is what an
//     acknowledgment is about.
//   - Close writes the pages out without a sync (they are then in the page
//     cache: a later kill keeps them); a file closed unsynced is the one
//     place the model is kinder for data, and the WAL syncs before it
//     closes.
//   - With FailSyncFile set, while that file exists every Sync fails with
//     EIO and writes nothing out (raftd --testing-fail-sync-file): a disk
//     that fails, turned on and off by a test from outside the process.
package lossyfs
