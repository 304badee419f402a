package tracker

// StateType is the leader's mode of replication to one member.
type StateType uint8

const (
	// StateProbe: the leader does not know where the member's log matches;
	// it sends one AppendEntries at a time and waits for the answer (or the
	// next heartbeat) before sending again.
	StateProbe StateType = iota
	// StateReplicate: the member accepted at Next-1; the leader streams
	// batches up to the inflight window without waiting (pipelining).
	StateReplicate
	// StateSnapshot: the member needs entries below the compaction point;
	// the driver streams it the snapshot at PendingSnapshot. Nothing else is
	// sent but heartbeats until the driver reports or the member
	// acknowledges PendingSnapshot.
	StateSnapshot
)

func (s StateType) String() string {
	switch s {
	case StateReplicate:
		return "replicate"
	case StateSnapshot:
		return "snapshot"
	}
	return "probe"
}

// Inflight is one AppendEntries in flight: its last index and its bytes.
type Inflight struct {
	Last, Bytes uint64
}

// Progress is the leader's record of one member (a voter or a learner).
//
// Invariants (impl/raft asserts them with the leader's log):
//   - 1 <= Next <= last+1 and Match <= last (last: the leader's last index).
//   - Match is spec matchIndex[leader][id]: the largest mmatchIndex of a
//     success response in this term. It only grows.
//   - In StateReplicate, Next > Match. In StateProbe, Next <= Match is
//     possible only after the member lost durable entries (a corruption it
//     recovered from): Match stays until its acknowledgments pass it again.
//   - Inflights are in increasing order of Last, each <= Next-1; their
//     count and bytes are within the configured window.
//   - Learner is true exactly when the member is a learner of the
//     configuration in force (Tracker.Reconfigure keeps it so).
type Progress struct {
	ID       uint64
	Match    uint64
	Next     uint64
	State    StateType
	Learner  bool
	Probed   bool // StateProbe: an AppendEntries is out and unanswered
	ProbeAge int  // heartbeats sent since the probe went out

	Inflights     []Inflight
	InflightBytes uint64

	PendingSnapshot uint64 // StateSnapshot: the index of the snapshot being streamed

	RecentActive bool   // heard from since the last check-quorum
	Round        uint64 // highest read round the member echoed
	Seq          uint64 // sequence number of the last AppendEntries sent
	SuccessSeq   uint64 // highest Seq echoed by a success response
}

// Window bounds the AppendEntries in flight to one member.
type Window struct {
	MsgsMax  int
	BytesMax uint64 // 0: no bound
}

// ResetInflights forgets every AppendEntries in flight.
func (pr *Progress) ResetInflights() {
	pr.Inflights = pr.Inflights[:0]
	pr.InflightBytes = 0
}

// BecomeProbe probes from next.
func (pr *Progress) BecomeProbe(next uint64) {
	pr.State, pr.Probed, pr.Next = StateProbe, false, next
	pr.ResetInflights()
}

// BecomeSnapshot waits for the snapshot at index.
func (pr *Progress) BecomeSnapshot(index uint64) {
	pr.State, pr.Probed, pr.PendingSnapshot = StateSnapshot, false, index
	pr.ResetInflights()
}

// BecomeReplicate streams from Match+1.
func (pr *Progress) BecomeReplicate() {
	pr.State, pr.Probed, pr.Next = StateReplicate, false, pr.Match+1
	pr.ResetInflights()
}

// Full reports whether the inflight window is used up.
func (pr *Progress) Full(w Window) bool {
	return len(pr.Inflights) >= w.MsgsMax || (w.BytesMax > 0 && pr.InflightBytes >= w.BytesMax)
}

// Paused reports whether the leader must not send entries now.
func (pr *Progress) Paused(w Window) bool {
	switch pr.State {
	case StateProbe:
		return pr.Probed
	case StateSnapshot:
		return true
	}
	return pr.Full(w)
}

// Sent records an AppendEntries whose last entry is last.
func (pr *Progress) Sent(last, bytes uint64, entries int) {
	if pr.State == StateProbe {
		pr.Probed, pr.ProbeAge = true, 0
		return
	}
	if entries > 0 {
		pr.Inflights = append(pr.Inflights, Inflight{Last: last, Bytes: bytes})
		pr.InflightBytes += bytes
		pr.Next = last + 1
	}
}

// FreeTo frees the inflights acknowledged up to index.
func (pr *Progress) FreeTo(index uint64) {
	k := 0
	for k < len(pr.Inflights) && pr.Inflights[k].Last <= index {
		pr.InflightBytes -= pr.Inflights[k].Bytes
		k++
	}
	if k > 0 {
		pr.Inflights = append(pr.Inflights[:0], pr.Inflights[k:]...)
	}
}
