package sim

import (
	"strings"
	"time"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kv/kvtest"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
)

// The KV service of a simulated node: what raftd's impl/server does around
// the replica, on the simulator's goroutine. A write is a kv.Command
// stamped with the receiving node's clock and proposed as one entry; its
// answer is the store's result once the entry is applied (replica
// Proposal.Done). A read is linearizable: a replica EventRead confirms the
// leadership and waits for the read index to be applied, and the store is
// read inside its Done, where it is exactly at that index. A leader that
// proposed nothing for IdleNoop proposes a kv no-op stamped with its clock,
// so that sessions expire when nobody writes.

// ServerBug is a set of test-only switches of the service layer, each
// re-introducing a failure its rule prevents (the bug catalogue,
// docs/raftsim.md).
type ServerBug uint8

const (
	// BugAckBeforeCommit: a put is answered "ok" as soon as the leader has
	// appended its entry, before the entry commits (the answer a put would
	// get: the entry's index as its revision).
	BugAckBeforeCommit ServerBug = 1 << iota
	// BugReadWithoutReadIndex: a node that believes it leads serves a read
	// from its store at once, without a ReadIndex round (no confirmation of
	// its leadership, no wait for the commit index to be applied).
	BugReadWithoutReadIndex
	serverBugEnd
)

var serverBugNames = map[ServerBug]string{
	BugAckBeforeCommit:      "ack-before-commit",
	BugReadWithoutReadIndex: "read-without-readindex",
}

func (b ServerBug) String() string {
	var names []string
	for bit := ServerBug(1); bit < serverBugEnd; bit <<= 1 {
		if b&bit != 0 {
			names = append(names, serverBugNames[bit])
		}
	}
	return strings.Join(names, ",")
}

// AllServerBugs lists every switch.
func AllServerBugs() []ServerBug {
	var out []ServerBug
	for bit := ServerBug(1); bit < serverBugEnd; bit <<= 1 {
		out = append(out, bit)
	}
	return out
}

// machine is a simulated node's state machine: the KV store (as raftd's),
// with the log it applied in this life and the answers it gave, for the
// at-most-once checker and the durability check.
type machine struct {
	n   *Node
	st  *kv.Store
	log []kvtest.Applied
}

func newMachine(n *Node) *machine {
	return &machine{n: n, st: kv.NewStore(kv.Options{TestingBugs: n.s.opts.KVBugs, OnMark: hitKVMark})}
}

// Apply implements replica.StateMachine.
func (m *machine) Apply(e raft.Entry) []byte {
	res := m.st.Apply(e.Index, e.Term, e.Data)
	m.log = append(m.log, kvtest.Applied{Index: e.Index, Term: e.Term, Data: e.Data, Result: res})
	m.n.s.check.apply(m.n, e, res)
	m.n.s.check.stateAt(m.n, e.Index, m.st.Hash())
	return res
}

// epochMs is the Unix time in milliseconds at virtual time 0; a node's
// clock is off by up to clockOffsetMsMax either way.
const (
	epochMs          = 1_700_000_000_000
	clockOffsetMsMax = 300
)

// clockMs is the node's wall clock: it runs at the node's rate (skew) from
// its own offset.
func (n *Node) clockMs() uint64 {
	return uint64(epochMs + n.clockOffsetMs + int64(float64(n.s.now)*n.rate)/int64(time.Millisecond))
}

// writeAnswer is what a node answers a client's write: the store's result,
// or the replica's error (with the leader it knows of).
type writeAnswer struct {
	result []byte
	err    error
	lead   raft.NodeID
}

// readAnswer is what a node answers a client's read.
type readAnswer struct {
	value    string
	revision uint64
	found    bool
	err      error
	lead     raft.NodeID
}

// serveWrite proposes a client's command; answer is called once, on the
// simulator's goroutine, unless the node goes down first.
func (n *Node) serveWrite(cmd kv.Command, answer func(writeAnswer)) {
	if n.r == nil {
		return
	}
	cmd.TimeMs = n.clockMs()
	data, err := cmd.Marshal()
	if err != nil {
		n.s.violation("Client: the workload built a command that does not encode: %v (%v)", cmd, err)
		return
	}
	n.lastProposeAt = n.s.now
	answered := false
	then := func(res replica.Result) {
		if answered {
			return
		}
		answered = true
		_, _, lead := n.r.Leadership()
		answer(writeAnswer{result: res.Value, err: res.Err, lead: lead})
	}
	before := n.w.LastIndex()
	n.propose(data, n.s.check.proposalDone(n, data, false, then))
	if n.s.opts.ServerBugs&BugAckBeforeCommit != 0 && cmd.Op == kv.OpPut && !answered && n.r != nil {
		// The bug: the entry is in the leader's log, so the put "cannot
		// fail" and is answered at once.
		if last := n.w.LastIndex(); last == before+1 {
			answered = true
			n.s.Counts.EarlyAcks++
			answer(writeAnswer{result: kv.Result{Code: kv.CodeOK, Index: last, Revision: last}.Marshal()})
		}
	}
}

// serveRead runs a linearizable read of key; answer is called once unless
// the node goes down first.
func (n *Node) serveRead(key string, answer func(readAnswer)) {
	if n.r == nil {
		return
	}
	if n.s.opts.ServerBugs&BugReadWithoutReadIndex != 0 {
		if role, _, _ := n.r.Leadership(); role == raft.RoleLeader {
			answer(n.readStore(key))
			return
		}
	}
	n.s.Counts.Reads++
	done := n.s.check.readDone(n, n.s.check.maxAcked(), func(rr replica.ReadResult) {
		if rr.Err != nil {
			_, _, lead := n.r.Leadership()
			answer(readAnswer{err: rr.Err, lead: lead})
			return
		}
		answer(n.readStore(key))
	})
	n.handle(replica.Event{Kind: replica.EventRead, Reads: []replica.Read{{Done: done}}})
}

func (n *Node) readStore(key string) readAnswer {
	v, rev, ok := n.sm.st.Get([]byte(key))
	return readAnswer{value: string(v), revision: rev, found: ok}
}

// idleNoop: a leader that proposed nothing for IdleNoop proposes a kv no-op
// stamped with its clock (raftd's idleNoops), so that the store's clock
// moves and sessions expire even when nobody writes.
func (n *Node) idleNoop() {
	if n.r == nil || n.s.opts.IdleNoop <= 0 || n.s.now-n.lastProposeAt < n.s.opts.IdleNoop {
		return
	}
	if role, _, _ := n.r.Leadership(); role != raft.RoleLeader {
		return
	}
	data, err := kv.Noop().At(n.clockMs()).Marshal()
	if err != nil {
		panic(err) // a no-op always encodes
	}
	n.lastProposeAt = n.s.now
	n.s.Counts.IdleNoops++
	n.propose(data, n.s.check.proposalDone(n, data, false, nil))
}
