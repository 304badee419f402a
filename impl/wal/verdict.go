package wal

// Verdict is what recovery concluded about the log it found (and, separately, about the
// hard state).
type Verdict uint8

const (
	// Clean: the log ends at a clean batch boundary. An empty first-boot log is Clean.
	Clean Verdict = iota + 1
	// TornTail: the hard state's verdict when one copy was torn or damaged and the
	// other holds the last acknowledged state (rows H4, H5): nothing is lost. The log
	// no longer gets it: its incomplete last batch is [Ambiguous].
	TornTail
	// Truncated: a checksum, chain or framing break inside what was durable, or with
	// valid data behind it. The log is cut at the last intact record; what follows is
	// quarantined, never served. The node must not count itself as holding anything past
	// the cut (seed 000: fence and catch up).
	Truncated
	// Ambiguous: the last batch fails verification and nothing vouches for it (row
	// R6, docs/wal.md "The ambiguous case"): either a write torn by a power cut before
	// its fdatasync returned (nothing durable lost) or a batch fdatasync'd, possibly
	// acknowledged, and damaged at rest before anything vouched for it. The bytes
	// cannot tell them apart. The log is cut before the batch, as for a torn write,
	// and Open marks the hard state AMBIGUOUS (HardState.Ambiguous, with
	// TruncatedAtTerm) before the cut is durable, so that a reopen, which finds a
	// clean log, still says what the boot found; the protocol core clears the mark
	// when it repairs the member (spec/power.go).
	Ambiguous
)

func (v Verdict) String() string {
	switch v {
	case Clean:
		return "CLEAN"
	case TornTail:
		return "TORN_TAIL"
	case Truncated:
		return "TRUNCATED"
	case Ambiguous:
		return "AMBIGUOUS"
	}
	return "VERDICT_INVALID"
}

// Recovery is what Open found and did.
type Recovery struct {
	// Verdict on the log, and the decision-table row that produced it (recoveryCases,
	// docs/wal.md).
	Verdict Verdict
	Case    string
	// Path lists the decision-table rows met, one per segment read, oldest first.
	Path []string
	// Reason says what stopped the scan, in words, with offsets.
	Reason string
	// IndexFirst and IndexLast bound the log after recovery; IndexFirst-1 is the
	// compaction watermark. IndexLast is the last intact record.
	IndexFirst uint64
	IndexLast  uint64
	// DurableIndex is the recovered durable index: Open fdatasyncs everything it keeps,
	// so it equals IndexLast.
	DurableIndex uint64
	// StopSegment and StopOffset say where the scan stopped (the file and byte offset of
	// the first batch slot not taken into the log).
	StopSegment string
	StopOffset  int64
	// EvidenceOffset, when not -1, is where in StopSegment a valid batch of the current
	// generation lies behind the break: the proof that the break was inside durable data.
	EvidenceOffset int64
	// Quarantined lists segment files renamed to corrupt-* because they lie behind a
	// break; they are kept for an operator and never read again.
	Quarantined []string
	// RereadsHealed counts verification failures that a re-read cured (transient flips).
	RereadsHealed int

	// HardState is the recovered hard state, with its own verdict (docs/wal.md).
	HardState        HardState
	HardStateVerdict Verdict
	HardStateReason  string
}
