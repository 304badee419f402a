// Package wal is the write-ahead log under a Raft node: a segmented log of checksummed,
// hash-chained records with group commit, a recovery verdict, and a separate hard-state
// file. An acknowledgment in this project means the write is fdatasync'd on a majority;
// this package is where "fdatasync'd" is made true and reported exactly. The on-disk
// format, the recovery decision table and the measured figures are in docs/wal.md.
//
// # Using it
//
// [Open] recovers what is on disk and returns a [Recovery] with a [Verdict]: [Clean],
// [TornTail] or [Truncated]. The caller (the protocol core's server loop) then, per
// Ready batch:
//
//	w.SetHardState(hs)            // durable on return, before any message that depends on it
//	w.Append(entries)             // returns at once; the caller assigns indexes and terms
//	w.WaitDurable(ctx, lastIndex) // or select on DurableNotify() and read DurableIndex()
//	// ... now send the messages that had to wait
//
// Conflicts use [WAL.TruncateSuffix]; snapshots use [WAL.CompactPrefix] (drop whole
// segments below a watermark) and [WAL.Reset] (restart the log after an installed
// snapshot). Truncating a suffix never moves the compaction watermark. Catch-up reads
// [WAL.Entries], bounded in bytes, verified record by record, straight from the segment
// files or from a bounded in-memory tail.
//
// # Durability
//
// The durable index only moves after a successful fdatasync of everything up to it;
// it only grows, except that TruncateSuffix clamps it. One flusher goroutine writes
// everything pending as one batch per segment and issues one fdatasync for it (group
// commit); Options.SyncDelay may hold the fdatasync back to gather more, never to
// report anything early. If a write or an fdatasync fails, the WAL enters a failed
// state: it says so loudly (an error from [WAL.Err], a log line through the injected
// logger), reports nothing durable ever again and refuses writes, and the process
// keeps running; reopening recovers from what is really on disk.
//
// # Integrity
//
// Every record carries a CRC-32C over its header and payload and the checksum of the
// record before it (a hash chain); every batch carries a header with the sync boundary
// (the durable index before it), its place in the file, the segment's generation and a
// generation-seeded body checksum; every segment file carries a header with its
// generation and where the chain enters it. All of it is checked on append, on every
// read, and at recovery. A read that fails is re-read before it is called corruption;
// corrupt bytes are never served.
//
// # Files
//
// Package vfs holds the file-system interface the WAL runs on, with the operating
// system's implementation and an in-memory disk that fails on purpose (torn and lost
// writes, bit flips at rest and on read, misdirected writes, fdatasync EIO, disk full),
// driven by a seed.
package wal
