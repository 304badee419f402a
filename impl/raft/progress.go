package raft

// progressState is the leader's mode of replication to one follower
// (etcd-io/raft's tracker.StateType).
type progressState uint8

const (
	// probe: the leader does not know where the follower's log matches; it
	// sends one AppendEntries at a time and waits for the answer (or the
	// next heartbeat) before sending again.
	stateProbe progressState = iota
	// replicate: the follower accepted at next-1; the leader streams
	// batches up to the inflight window without waiting (pipelining).
	stateReplicate
	// snapshot: the follower needs entries below the compaction point; the
	// driver streams it the snapshot at pendingSnapshot. Nothing else is
	// sent but heartbeats until the driver reports (ReportSnapshot) or the
	// follower acknowledges pendingSnapshot.
	stateSnapshot
)

func (s progressState) String() string {
	switch s {
	case stateReplicate:
		return "replicate"
	case stateSnapshot:
		return "snapshot"
	}
	return "probe"
}

// inflight is one AppendEntries in flight: its last index and its bytes.
type inflight struct {
	last, bytes uint64
}

// progress is the leader's record of one follower.
//
// Invariants:
//   - 1 <= next <= last+1 and match <= last (last: the leader's last index).
//   - match is spec matchIndex[leader][id]: the largest mmatchIndex of a
//     success response in this term. It only grows (HandleAppendEntriesResponseMax).
//   - In replicate, next > match. In probe, next <= match is possible only
//     after the follower lost durable entries (a corruption it recovered
//     from): match stays, as the spec's does, until the follower's
//     acknowledgments pass it again.
//   - inflights are in increasing order of last, each <= next-1; their
//     count and bytes are within the configured window.
type progress struct {
	id       NodeID
	match    uint64
	next     uint64
	state    progressState
	probed   bool // probe: an AppendEntries is out and unanswered
	probeAge int  // heartbeats sent since the probe went out

	inflights     []inflight
	inflightBytes uint64

	pendingSnapshot uint64 // snapshot: the index of the snapshot being streamed

	recentActive bool   // heard from since the last check-quorum
	round        uint64 // highest read round the follower echoed
	seq          uint64 // sequence number of the last AppendEntries sent
	successSeq   uint64 // highest seq echoed by a success response
}

func (pr *progress) resetInflights() {
	pr.inflights = pr.inflights[:0]
	pr.inflightBytes = 0
}

func (pr *progress) becomeProbe(next uint64) {
	pr.state, pr.probed, pr.next = stateProbe, false, next
	pr.resetInflights()
}

func (pr *progress) becomeSnapshot(index uint64) {
	pr.state, pr.probed, pr.pendingSnapshot = stateSnapshot, false, index
	pr.resetInflights()
}

func (pr *progress) becomeReplicate() {
	pr.state, pr.probed, pr.next = stateReplicate, false, pr.match+1
	pr.resetInflights()
}

// full reports whether the inflight window is used up.
func (pr *progress) full(c *Config) bool {
	return len(pr.inflights) >= c.InflightMsgsMax || (c.InflightBytesMax > 0 && pr.inflightBytes >= c.InflightBytesMax)
}

// paused reports whether the leader must not send entries now.
func (pr *progress) paused(c *Config) bool {
	switch pr.state {
	case stateProbe:
		return pr.probed
	case stateSnapshot:
		return true
	}
	return pr.full(c)
}

// sent records an AppendEntries whose last entry is last.
func (pr *progress) sent(last, bytes uint64, entries int) {
	if pr.state == stateProbe {
		pr.probed, pr.probeAge = true, 0
		return
	}
	if entries > 0 {
		pr.inflights = append(pr.inflights, inflight{last: last, bytes: bytes})
		pr.inflightBytes += bytes
		pr.next = last + 1
	}
}

// freeTo frees the inflights acknowledged up to index.
func (pr *progress) freeTo(index uint64) {
	k := 0
	for k < len(pr.inflights) && pr.inflights[k].last <= index {
		pr.inflightBytes -= pr.inflights[k].bytes
		k++
	}
	if k > 0 {
		pr.inflights = append(pr.inflights[:0], pr.inflights[k:]...)
	}
}
