package wal

import "errors"

// Sentinel errors. Every error the WAL returns wraps one of these (test with errors.Is)
// and carries the context (index, segment, offset) in its message.
var (
	// ErrCorrupt: bytes failed verification (checksum, hash chain or framing) after a
	// re-read. They are never served.
	ErrCorrupt = errors.New("wal: corrupt")
	// ErrFailed: an fdatasync or write failed; the WAL reports nothing durable beyond
	// what it reported before, accepts no writes, and stays failed until reopened.
	ErrFailed = errors.New("wal: failed")
	// ErrOutOfRange: an index or range outside the log (beyond the last index, lo > hi,
	// or compaction beyond the durable index).
	ErrOutOfRange = errors.New("wal: index out of range")
	// ErrCompacted: an index at or below the compaction watermark.
	ErrCompacted = errors.New("wal: index compacted")
	// ErrNonContiguous: an append whose indexes do not continue the log.
	ErrNonContiguous = errors.New("wal: non-contiguous index")
	// ErrChain: records (AppendRecords) that do not continue the log: an index that
	// does not follow, a term going back, or a checksumPrev that is not the checksum
	// of the record before.
	ErrChain = errors.New("wal: records do not continue the chain")
	// ErrInvalid: an argument that can never be accepted (term going backwards, an entry
	// too large, a vote changed within a term, bad options).
	ErrInvalid = errors.New("wal: invalid argument")
	// ErrTruncated: the entry awaited by WaitDurable was removed by TruncateSuffix or
	// Reset before it became durable.
	ErrTruncated = errors.New("wal: entry truncated")
	// ErrLocked: Open found the directory locked by another owner (another process,
	// or a WAL in this one not yet closed).
	ErrLocked = errors.New("wal: directory locked")
	// ErrVersion: Open found a segment whose header verifies but names a format
	// version this build does not read (written by another build). Nothing is
	// changed on disk; the node must run a build that reads it.
	ErrVersion = errors.New("wal: unknown format version")
	// ErrClosed: the WAL is closed.
	ErrClosed = errors.New("wal: closed")
)
