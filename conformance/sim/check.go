package sim

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/durableraft/durableraft/impl/kv/kvtest"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wal"
)

// The checks run on every step of a simulated run:
//
//	ElectionSafety       at most one leader per term, ever
//	StateMachineSafety   every replica applies the same entry at each index
//	AckedDurable         an acknowledged entry is durable (as its WAL reports)
//	                     on a majority when it is acknowledged, counting
//	                     TRUNCATED members as holders (as the spec does)
//	RecoveryKeepsDurable a restart that is not TRUNCATED recovers everything
//	                     the WAL had reported durable
//	NoAckedLoss          every leader of a later term holds every entry
//	                     acknowledged before its term
//	ReadIndex            a read returns an index at or above every write
//	                     acknowledged before it was asked
//	ResultIntegrity      an acknowledged proposal is the entry applied at its
//	                     index, answered with the store's answer there
//	ResultAgreement      every replica answers an entry with the same bytes
//	ByteIdentical        replicas that agree on a committed index hold the
//	                     same record bytes up to it (equal chain values)
//	Liveness             after the faults heal, a leader commits a final
//	                     entry and every client operation is answered
type checker struct {
	s       *Sim
	acks    map[uint64]ackedEntry
	leaders map[uint64]raft.NodeID
	applied map[uint64]appliedEntry
	// pending client operations per node (a crash makes their outcome
	// unknown).
	pending      map[raft.NodeID]int
	finalPending raft.NodeID
	finalAcked   bool
	finalIndex   uint64
	ackMax       uint64
	// states is the state machine's hash at each index, as the first node
	// to reach it by applying entries had it.
	states map[uint64]uint64
	// prefix is the run's committed log as applied (entry k at k-1), each
	// entry as the first node to apply it did: what a node restoring a
	// snapshot at index i applied up to i, for the end checks.
	prefix []kvtest.Applied
}

type appliedEntry struct{ entry, result string }

type ackedEntry struct {
	term       uint64
	commitTerm uint64 // the term of the first leader that applied it
	// voters: with membership, the voters of the configuration of the node
	// that acknowledged it, as it applied it: the one it was committed in
	// (a change is an input of its own, the commit and the apply one step).
	voters []raft.NodeID
}

func (c *checker) init(s *Sim) {
	c.s = s
	c.acks, c.leaders, c.applied = map[uint64]ackedEntry{}, map[uint64]raft.NodeID{}, map[uint64]appliedEntry{}
	c.pending = map[raft.NodeID]int{}
}

func (c *checker) violation(format string, args ...any) { c.s.violation(format, args...) }

func (c *checker) maxAcked() uint64 { return c.ackMax }

// pendingOps counts the operations pending on members (a removed member's
// never end: the leader sends it nothing more, and its operator stops it).
func (c *checker) pendingOps() int {
	k := 0
	for id, v := range c.pending {
		if c.s.finalMember(c.s.Node(id)) {
			k += v
		}
	}
	return k
}

// observe runs after a node took a step: ElectionSafety, and NoAckedLoss
// for a leader seen for the first time in its term.
func (c *checker) observe(n *Node) {
	role, term, _ := n.r.Leadership()
	if role != raft.RoleLeader {
		return
	}
	if l, ok := c.leaders[term]; ok {
		if l != n.ID {
			c.violation("ElectionSafety: term %d elected n%d and n%d", term, l, n.ID)
		}
		return
	}
	c.leaders[term] = n.ID
	c.s.Counts.Elections++
	c.s.logf("n%d leads term %d", n.ID, term)
	for _, i := range c.sortedAcks() {
		a := c.acks[i]
		if a.commitTerm >= term || i < n.w.FirstIndex() {
			continue // (below the compaction point: in the leader's snapshot, its committed prefix)
		}
		if t, err := n.w.Term(i); err != nil || t != a.term {
			c.violation("NoAckedLoss: leader n%d of term %d lacks acknowledged entry %d/%d", n.ID, term, a.term, i)
		}
	}
}

func (c *checker) sortedAcks() []uint64 {
	idx := make([]uint64, 0, len(c.acks))
	for i := range c.acks {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	return idx
}

// afterStep runs the cheap global checks after every simulated event.
func (c *checker) afterStep() {}

// persistBeforeSend: a message leaves only once the hard state it depends
// on is durable (the Ready contract, rule 1): a granted vote with the vote
// durable, any message with its term durable. (A candidate's vote request
// needs its term durable; its own vote may be Nil: its voter floor can
// refuse itself, which raft.tla allows.)
func (c *checker) persistBeforeSend(n *Node, m *replica.Message) {
	hs := n.w.Progress().HardState
	switch {
	case m.Type == raft.MsgPreVote || m.Type == raft.MsgPreVoteResp:
		return // no hard state of its own: a pre-vote is for a term not yet taken
	case hs.Term < m.Term:
		c.violation("PersistBeforeSend: n%d sent %v with durable term %d", n.ID, m.Message, hs.Term)
	case m.Type == raft.MsgVoteResp && m.Granted && hs.Term == m.Term && hs.Vote != uint64(m.To):
		c.violation("PersistBeforeSend: n%d granted its vote in term %d to n%d with durable vote %d", n.ID, m.Term, m.To, hs.Vote)
	}
}

// durableTruth: the durable index the core believes is durable in the WAL,
// with the same entry (Advance's contract, rule 4).
func (c *checker) durableTruth(n *Node) {
	st := n.r.Status()
	if st.WALFailed || st.Durable == 0 {
		return
	}
	p := n.w.Progress()
	// An installed snapshot is durable in its file before the WAL's reset
	// after it is.
	if st.Durable > max(p.DurableIndex, st.Snapshot.Index) {
		c.violation("DurableTruth: n%d's core counts %d durable, its WAL %d (snapshot %d)", n.ID, st.Durable, p.DurableIndex, st.Snapshot.Index)
	}
}

// apply records an entry a node applied and the answer its store gave:
// StateMachineSafety, and ResultAgreement (every replica answers an entry
// with the same bytes: the state machine is deterministic).
func (c *checker) apply(n *Node, e raft.Entry, result []byte) {
	key := fmt.Sprintf("%d/%x", e.Term, e.Data)
	if prev, ok := c.applied[e.Index]; ok {
		if prev.entry != key {
			c.violation("StateMachineSafety: index %d applied as %s and as %s (n%d)", e.Index, prev.entry, key, n.ID)
		} else if prev.result != string(result) {
			c.violation("ResultAgreement: n%d answered entry %d/%d with %x, another replica with %x", n.ID, e.Term, e.Index, result, prev.result)
		}
	} else {
		c.applied[e.Index] = appliedEntry{entry: key, result: string(result)}
		if e.Index != uint64(len(c.prefix))+1 {
			c.violation("StateMachineSafety: n%d applied %d first, before any node applied %d", n.ID, e.Index, len(c.prefix)+1)
		} else {
			c.prefix = append(c.prefix, kvtest.Applied{Index: e.Index, Term: e.Term, Data: e.Data, Result: result})
		}
	}
	if a, ok := c.acks[e.Index]; ok && n.r != nil {
		// n learned the commit from a leader of a term no newer than its own.
		_, term, _ := n.r.Leadership()
		a.commitTerm = min(a.commitTerm, term)
		c.acks[e.Index] = a
	}
}

// proposalDone wraps the Done of a proposal of data: an acknowledgment
// must be the entry proposed with the answer the state machine gave, and
// durable on a majority. then (nil: nothing) is the service's own Done.
func (c *checker) proposalDone(n *Node, data []byte, final bool, then func(replica.Result)) func(replica.Result) {
	c.pending[n.ID]++
	ep := n.epoch
	return func(res replica.Result) {
		if n.epoch == ep {
			c.pending[n.ID]--
		}
		if res.Err != nil {
			if final {
				c.finalPending = 0
			}
		} else {
			c.acknowledged(n, data, res)
			if final {
				c.finalAcked, c.finalIndex = true, res.Index
			}
		}
		if then != nil {
			then(res)
		}
	}
}

// acknowledged checks an acknowledgment: ResultIntegrity, AckedDurable,
// NoAckedLoss against the leaders of later terms.
func (c *checker) acknowledged(n *Node, data []byte, res replica.Result) {
	log := n.sm.log
	if res.Index < 1 || res.Index > uint64(len(log)) || !bytes.Equal(log[res.Index-1].Data, data) || !bytes.Equal(log[res.Index-1].Result, res.Value) {
		c.violation("ResultIntegrity: n%d acknowledged a proposal at %d/%d that is not the entry it applied there, or not with its answer", n.ID, res.Term, res.Index)
		return
	}
	c.s.Counts.Acked++
	// Committed by a leader of a term no newer than n's own.
	_, commitTerm, _ := n.r.Leadership()
	a := ackedEntry{term: res.Term, commitTerm: commitTerm}
	if c.s.opts.Membership {
		a.voters = n.r.Membership().Voters
	}
	c.acks[res.Index] = a
	c.ackMax = max(c.ackMax, res.Index)
	c.checkAckedDurable(res.Index)
	for _, l := range c.s.Nodes {
		if l.r == nil {
			continue
		}
		if role, term, _ := l.r.Leadership(); role != raft.RoleLeader || term <= commitTerm || res.Index < l.w.FirstIndex() {
			continue
		}
		if t, err := l.w.Term(res.Index); err != nil || t != a.term {
			c.violation("NoAckedLoss: leader n%d lacks entry %d/%d acknowledged now", l.ID, a.term, res.Index)
		}
	}
}

// crashed makes a crashed node's pending operations' outcomes unknown.
func (c *checker) crashed(n *Node) {
	c.pending[n.ID] = 0
	if c.finalPending == n.ID {
		c.finalPending = 0
	}
}

// checkAckedDurable: AckedDurable for the entry at index.
func (c *checker) checkAckedDurable(index uint64) {
	a := c.acks[index]
	holders, members := 0, len(c.s.Nodes)
	if a.voters != nil {
		members = len(a.voters)
	}
	for _, n := range c.s.Nodes {
		if (a.voters == nil || slices.Contains(a.voters, n.ID)) && n.holdsDurable(index, a.term) {
			holders++
		}
	}
	if holders*2 <= members {
		c.violation("AckedDurable: acknowledged entry %d/%d is durable on %d of the %d voters it was committed by", a.term, index, holders, members)
	}
}

// holdsDurable: the node's WAL reports the entry durable, or the node is
// TRUNCATED (a corruption may have taken its copy; the spec counts it).
func (n *Node) holdsDurable(index, term uint64) bool {
	if n.r == nil {
		st := n.stopped
		return st.truncated || (index >= 1 && index < st.first) ||
			(st.durable >= index && index >= 1 && index <= uint64(len(st.terms)) && st.terms[index-1] == term)
	}
	if n.r.Status().HardState.TruncatedAtTerm != 0 || n.flipPending {
		return true
	}
	if index < n.w.FirstIndex() {
		return true // compacted: in its snapshot
	}
	p := n.w.Progress()
	t, err := n.w.Term(index)
	return p.DurableIndex >= index && err == nil && t == term
}

// readDone wraps the Done of a read: it is answered at an index at or
// above every write acknowledged before it was asked. then (nil: nothing)
// is the service's own Done.
func (c *checker) readDone(n *Node, ackedBefore uint64, then func(replica.ReadResult)) func(replica.ReadResult) {
	c.pending[n.ID]++
	ep := n.epoch
	return func(res replica.ReadResult) {
		if n.epoch == ep {
			c.pending[n.ID]--
		}
		if res.Err == nil {
			c.s.Counts.ReadsServed++
			if res.Index < ackedBefore || res.Applied < res.Index {
				c.violation("ReadIndex: read on n%d answered at index %d (applied %d), below the write acknowledged at %d before it was asked",
					n.ID, res.Index, res.Applied, ackedBefore)
			}
		}
		if then != nil {
			then(res)
		}
	}
}

// recovered: RecoveryKeepsDurable, at a boot that is not TRUNCATED.
func (n *Node) checkRecovered(w *wal.WAL, rec *wal.Recovery) {
	st := n.stopped
	if n.batchDamaged && rec.Verdict == wal.Clean {
		n.s.violation("DamageFound: n%d's last synced batch was damaged at rest, yet recovery says CLEAN (%s: %s)", n.ID, rec.Case, rec.Reason)
	}
	if n.boots == 1 || rec.Verdict == wal.Truncated || (n.batchDamaged && rec.Verdict == wal.Ambiguous) || st.durable == 0 {
		return
	}
	for i := max(w.FirstIndex(), st.first, 1); i <= st.durable; i++ {
		t, err := w.Term(i)
		if err != nil || t != st.terms[i-1] {
			n.s.violation("RecoveryKeepsDurable: n%d recovered %s (%s) but lost durable entry %d/%d: %s",
				n.ID, rec.Verdict, rec.Case, st.terms[i-1], i, rec.Reason)
			return
		}
	}
}

// atEnd runs the end-of-run checks: ByteIdentical between every pair of
// live replicas, and every acknowledged entry durable on a majority.
func (c *checker) atEnd() {
	for _, i := range c.sortedAcks() {
		c.checkAckedDurable(i)
	}
	for _, a := range c.s.Nodes {
		for _, b := range c.s.Nodes {
			if a.ID < b.ID && a.r != nil && b.r != nil && c.s.finalMember(a) && c.s.finalMember(b) {
				checkIdentical(c, a, b)
			}
		}
	}
}

func checkIdentical(c *checker, a, b *Node) {
	ca, cb := a.r.Status().Commit, b.r.Status().Commit
	i := min(ca, cb)
	if i == 0 || i < a.w.FirstIndex() || i < b.w.FirstIndex() {
		return
	}
	sa, errA := a.w.Checksum(i)
	sb, errB := b.w.Checksum(i)
	if errA != nil || errB != nil || sa != sb {
		c.violation("ByteIdentical: n%d and n%d disagree at committed index %d: chain %08x (%v) vs %08x (%v)", a.ID, b.ID, i, sa, errA, sb, errB)
	}
}

// appliedPrefix is the committed log up to index, as applied, for node n
// restoring a snapshot there.
func (c *checker) appliedPrefix(n *Node, index uint64) []kvtest.Applied {
	if index > uint64(len(c.prefix)) {
		c.violation("SnapshotState: n%d restored a state at %d; entries were applied up to %d only", n.ID, index, len(c.prefix))
		index = uint64(len(c.prefix))
	}
	return slices.Clone(c.prefix[:index])
}
