package wal

import "github.com/durableraft/durableraft/impl/marks"

// Coverage marks (impl/marks): the WAL's paths worth reaching.
var (
	markTornTailRepaired = marks.New("wal/torn-tail-repaired", "recovery dropped an incomplete last batch and sealed over its slot")
	markTruncatedCut     = marks.New("wal/truncated-recovered", "recovery found durable data lost or damaged (TRUNCATED) and cut the log at the break")
	markFailed           = marks.New("wal/failed", "a write, an fdatasync or a read of durable data failed: the WAL failed loudly and stayed up")
	markSuffixTruncated  = marks.New("wal/suffix-truncated", "a suffix truncation started a new segment superseding the old suffix")
)
