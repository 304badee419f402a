package raft

import "errors"

// Linearizable reads without writing to the log (Raft thesis §6.4).
//
// ReadIndex (the default): the leader records its commit index, then
// confirms that it is still the leader by a round of heartbeats that a
// quorum answers; a read of the state machine at or after that index is
// then linearizable. A new leader first waits for its own term's first
// commit (the no-op it appends on election), since only then is its commit
// index at least every earlier leader's.
//
// LeaseRead (off by default, Config.LeaseRead, needs CheckQuorum) skips
// the heartbeat round: the leader answers at once. It is safe only under a
// clock assumption: ticks on all nodes advance at the same rate within a
// bounded drift, and messages are delivered (or lost) within that bound.
// The argument: with CheckQuorum a leader steps down once an election
// timeout passes without hearing from a quorum, and a follower ignores
// vote requests for an election timeout after hearing from its leader, so
// no other leader can be elected while this one still believes it leads —
// if both measure the election timeout alike. Drift between nodes' tick
// rates, a paused process (GC, VM migration) or a delayed tick eats into
// that margin and can serve a stale read. The heartbeat round of ReadIndex
// assumes nothing about clocks.

type pendingRead struct {
	ctx   []byte
	index uint64
	round uint64
}

// ReadContextBytesMax bounds a ReadIndex request context.
const ReadContextBytesMax = 1 << 10

// ReadIndex requests a linearizable read. The answer comes as a ReadState
// in a later Ready, carrying ctx. Only the leader answers (ErrNotLeader
// elsewhere: the caller forwards to Status().Lead).
func (n *Node) ReadIndex(ctx []byte) error {
	defer n.checkInvariants()
	switch {
	case n.walFailed:
		return ErrWALFailed
	case n.role != RoleLeader:
		return ErrNotLeader
	case len(ctx) > ReadContextBytesMax:
		return errors.New("raft: read context too large")
	}
	r := pendingRead{ctx: append([]byte(nil), ctx...)}
	if n.log.mustTerm(n.log.committed) != n.hs.Term {
		n.waitingReads = append(n.waitingReads, r)
		return nil
	}
	n.startReads([]pendingRead{r})
	return nil
}

// startReads records the commit index for the reads and starts a
// heartbeat round to confirm the leadership (or answers at once with a
// lease or as the only voter).
func (n *Node) startReads(rs []pendingRead) {
	for k := range rs {
		rs[k].index = n.log.committed
	}
	if n.cfg.LeaseRead || n.soleVoter() {
		for _, r := range rs {
			n.readStates = append(n.readStates, ReadState{Index: r.index, Context: r.ctx})
		}
		return
	}
	n.readRound++
	for k := range rs {
		rs[k].round = n.readRound
	}
	n.pendingReads = append(n.pendingReads, rs...)
	n.bcastHeartbeat()
}

// serveWaitingReads starts the reads that waited for the term's first
// commit.
func (n *Node) serveWaitingReads() {
	if len(n.waitingReads) > 0 {
		rs := n.waitingReads
		n.waitingReads = nil
		n.startReads(rs)
	}
}

// releaseReads answers the pending reads whose round a quorum echoed.
func (n *Node) releaseReads() {
	k := 0
	for ; k < len(n.pendingReads); k++ {
		r := n.pendingReads[k]
		if !n.trk.RoundConfirmed(uint64(n.id), r.round) {
			break
		}
		n.readStates = append(n.readStates, ReadState{Index: r.index, Context: r.ctx})
	}
	if k > 0 {
		n.mark(MarkReadConfirmed)
		n.pendingReads = append(n.pendingReads[:0], n.pendingReads[k:]...)
	}
}

// soleVoter reports whether the leader is the only voter: its own commit
// is the quorum's, and a read needs no round.
func (n *Node) soleVoter() bool {
	v := n.trk.Config.Voters
	return len(v) == 1 && NodeID(v[0]) == n.id
}
