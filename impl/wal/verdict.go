package wal

// Verdict is what recovery concluded about the log it found (and, separately, about the
// hard state).
type Verdict uint8

const (
	// Clean: the log ends at a clean batch boundary. An empty first-boot log is Clean.
	Clean Verdict = iota + 1
	// TornTail: the last batch is incomplete and nothing on disk shows it was ever
	// fdatasync'd, so it was never reported durable: it is dropped. This includes the
	// one ambiguous case (docs/wal.md): a last batch damaged at rest after its fdatasync,
	// before anything vouched for it.
	TornTail
	// Truncated: a checksum, chain or framing break inside what was durable, or with
	// valid data behind it. The log is cut at the last intact record; what follows is
	// quarantined, never served. The node must not count itself as holding anything past
	// the cut (seed 000: fence and catch up).
	Truncated
)

func (v Verdict) String() string {
	switch v {
	case Clean:
		return "CLEAN"
	case TornTail:
		return "TORN_TAIL"
	case Truncated:
		return "TRUNCATED"
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
