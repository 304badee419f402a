package wal

import (
	"fmt"
	"log/slog"
	"time"
)

// Options configure a WAL. The zero value is usable: every zero field takes its default.
type Options struct {
	// SegmentBytes is the size each segment file is preallocated to. Default 64 MiB.
	SegmentBytes int64
	// BlockBytes is the alignment of every batch, a power of two of at least 512. A torn
	// write of one batch cannot reach the blocks of an earlier, synced batch as long as
	// BlockBytes is a multiple of the device's atomic write unit (its physical sector,
	// often 4 KiB even when it reports 512). Default 4096.
	BlockBytes int
	// EntryBytesMax bounds one entry's payload. Default 1 MiB; it must fit in a segment.
	EntryBytesMax int
	// TailCacheBytes bounds the encoded records kept in memory after they reach the disk,
	// for the hot path of reads. Records not yet on disk are always kept. Default 4 MiB.
	TailCacheBytes int
	// SyncDelay lets the flusher wait up to this long after work arrives, to gather more
	// into one fdatasync (the seed's wal-sync-ms). It trades latency for throughput and
	// never opens a durability gap: nothing is reported durable before its fdatasync.
	// Zero (the default) syncs as soon as something is pending; batches still form while
	// the previous fdatasync runs.
	SyncDelay time.Duration
	// SealDelay: after this long without new work the flusher writes a seal (an empty
	// batch) so that the last batch is vouched for on disk, shrinking the one case that
	// recovery cannot tell apart (docs/wal.md, "The ambiguous case"). Default 100ms;
	// negative disables idle seals (Open and Close still seal).
	SealDelay time.Duration
	// RecycleMax is how many compacted segment files are kept for reuse instead of
	// being removed. Default 2; negative disables reuse.
	RecycleMax int
	// ReadRetries is how many times a read that fails verification is repeated before
	// it is called corruption (bit flips on read are often transient). Default 2.
	ReadRetries int
	// Logger receives the WAL's loud lines: fdatasync failure, recovery verdicts,
	// corruption found on read, durable-index clamps. Default slog.Default().
	Logger *slog.Logger

	// Stepped: the WAL starts no goroutine of its own and nothing reaches the disk
	// until the caller calls Step (see "Steps, and stepped mode" in the package
	// documentation, and docs/wal.md).
	// The steps are the ones the flusher and preparer goroutines loop over in the
	// default (production) mode. Open itself still performs recovery's I/O.
	Stepped bool
	// Clock drives SyncDelay and SealDelay in both modes. Default: the real clock. In
	// stepped mode a virtual clock makes a seeded run replay exactly.
	Clock Clock

	// ObserveFlush, when set, is told the number of records each group-commit
	// cycle made durable (for a records-per-fdatasync metric). It is called with
	// the WAL's lock held and must not block or call the WAL.
	ObserveFlush func(records int)

	// bugs re-introduces defects that tests must catch (tests only).
	bugs walBug
}

// Clock is the time source of the WAL's delays.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// walBug is a set of test-only switches, each re-introducing a defect that a test
// must catch (TestBugSwitchesAreCaught).
type walBug uint8

const (
	// bugPublishBeforeSync: StepSync reports the job's records durable before its
	// fdatasync (caught by TestCrashAtEveryPoint, issue 10 item 11).
	bugPublishBeforeSync walBug = 1 << iota
	// bugEdgeTriggered: an edge-triggered pipeline: the flusher consumes the doorbell
	// rung during a cycle and then waits for a new ring; in stepped mode, work that
	// arrived while a cycle was in flight is not due after its publish (caught by
	// TestAppendDuringSyncFlusher and TestAppendDuringSyncStepped, issue 10 item 12).
	bugEdgeTriggered
	// bugPublishTip: publish advances the durable index to the last index appended,
	// not the last index the job took (caught by TestAppendDuringSyncStepped).
	bugPublishTip
	// bugCorruptReadNotFatal: a read that fails verification inside the durable
	// prefix returns ErrCorrupt but leaves the WAL working (caught by
	// TestCorruptReadFailsWAL, issue 10 item 6).
	bugCorruptReadNotFatal
)

const (
	segmentBytesDefault   = 64 << 20
	blockBytesDefault     = 4096
	entryBytesMaxDefault  = 1 << 20
	tailCacheBytesDefault = 4 << 20
	sealDelayDefault      = 100 * time.Millisecond
	recycleMaxDefault     = 2
	readRetriesDefault    = 2
)

func (o Options) withDefaults() Options {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = segmentBytesDefault
	}
	if o.BlockBytes == 0 {
		o.BlockBytes = blockBytesDefault
	}
	if o.EntryBytesMax == 0 {
		o.EntryBytesMax = min(entryBytesMaxDefault, int(o.SegmentBytes)/4)
	}
	if o.TailCacheBytes == 0 {
		o.TailCacheBytes = tailCacheBytesDefault
	}
	if o.SealDelay == 0 {
		o.SealDelay = sealDelayDefault
	}
	if o.RecycleMax == 0 {
		o.RecycleMax = recycleMaxDefault
	}
	if o.RecycleMax < 0 {
		o.RecycleMax = 0
	}
	if o.ReadRetries == 0 {
		o.ReadRetries = readRetriesDefault
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	return o
}

func (o Options) validate() error {
	b := int64(o.BlockBytes)
	switch {
	case b < blockBytesMin || b > blockBytesMax || b&(b-1) != 0:
		return fmt.Errorf("%w: BlockBytes %d must be a power of two in [%d, %d]", ErrInvalid, b, blockBytesMin, blockBytesMax)
	case o.SegmentBytes < 4*b || o.SegmentBytes > segmentBytesMax || o.SegmentBytes%b != 0:
		return fmt.Errorf("%w: SegmentBytes %d must be a multiple of BlockBytes %d, at least 4 blocks and at most %d",
			ErrInvalid, o.SegmentBytes, b, int64(segmentBytesMax))
	case o.EntryBytesMax <= 0 || int64(o.EntryBytesMax) > o.recordRoomMax()-recordHeaderBytes:
		return fmt.Errorf("%w: EntryBytesMax %d must be positive and fit one record in an empty segment (%d)",
			ErrInvalid, o.EntryBytesMax, o.recordRoomMax()-recordHeaderBytes)
	case o.TailCacheBytes < 0 || o.SyncDelay < 0 || o.ReadRetries < 0:
		return fmt.Errorf("%w: negative TailCacheBytes, SyncDelay or ReadRetries", ErrInvalid)
	}
	return nil
}

// recordRoomMax is the body room of one batch in an empty segment.
func (o Options) recordRoomMax() int64 {
	return o.SegmentBytes - int64(o.BlockBytes) - batchHeaderBytes
}
