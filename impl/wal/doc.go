// Package wal is the write-ahead log under a Raft node: a segmented log of checksummed,
// hash-chained records with group commit, a recovery verdict, and a separate hard-state
// file. An acknowledgment in this project means the write is fdatasync'd on a majority;
// this package is where "fdatasync'd" is made true and reported exactly. The on-disk
// format, the recovery decision table and the measured figures are in docs/wal.md.
//
// # Using it
//
// [Open] recovers what is on disk and returns a [Recovery] with a [Verdict]: [Clean],
// [Ambiguous] or [Truncated] ([TornTail] is the hard state's). Every write is a
// submission that returns at once and takes the next ticket of one counter: [WAL.Append], [WAL.AppendRecords],
// [WAL.TruncateSuffix], [WAL.Reset], [WAL.SubmitHardState], [WAL.SubmitCompact],
// [WAL.SubmitSync]. [WAL.Progress] is one snapshot of what is durable: the durable
// index and its term, Synced (every ticket up to it is durable) and the hard state;
// [WAL.Notify] is closed at each change. A caller that must never block (the replica
// runtime), per Ready batch:
//
//	w.SubmitHardState(hs)         // validated at once, written in order with the log
//	w.Append(entries)             // the caller assigns indexes and terms
//	t := w.SubmitSync()           // a ticket covering both
//	// hold the inputs that depend on them; on <-w.Notify(), read w.Progress():
//	// once Progress().Synced >= t, send the messages that had to wait.
//
// The blocking forms ([WAL.Sync], [WAL.SetHardState], [WAL.CompactPrefix],
// [WAL.WaitDurable]) submit and wait. Conflicts use [WAL.TruncateSuffix]; snapshots
// use [WAL.CompactPrefix] (drop whole segments below a watermark) and [WAL.Reset]
// (restart the log after an installed snapshot). Truncating a suffix never moves the
// compaction watermark. Catch-up reads [WAL.Entries], or [WAL.Records] for the stored
// record bytes that a follower's [WAL.AppendRecords] takes byte for byte (verified
// shipping: checksum and hash chain checked at every ingress).
//
// # Durability
//
// The durable index only moves after a successful fdatasync of everything up to it;
// it only grows, except that TruncateSuffix clamps it. Group commit: a cycle takes all
// pending work at once, writes it as one batch per segment and issues one fdatasync
// for it; Options.SyncDelay may hold the cycle back to gather more, never to report
// anything early. If a write or an fdatasync fails, the WAL enters a failed state: it
// says so loudly (an error from [WAL.Err], a log line through the injected logger),
// reports nothing durable ever again and refuses writes, and the process keeps
// running; reopening recovers from what is really on disk. A read that finds damage
// inside the durable prefix fails the WAL the same way.
//
// # Steps, and stepped mode
//
// Every write goes through explicit steps ([StepKind]): [StepWrite] takes the pending
// work and writes up to the next point where an fdatasync must come first,
// [StepSync] is that fdatasync, [StepPublish] reports what became durable;
// [StepSeal] and [StepPrepare] seal an idle log and make spare segment files. By
// default a flusher and a preparer goroutine loop over them. With Options.Stepped the
// WAL has no goroutine of its own and nothing reaches the disk until the caller calls
// [WAL.Step]; [WAL.NextStep] says what Step would do, [WAL.NextDeadline] when a step
// becomes due on Options.Clock. A simulator can then delay StepSync (a slow disk),
// interleave submissions with it, crash the disk inside any step, and replay a seed
// byte for byte. The two modes run the same code.
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
