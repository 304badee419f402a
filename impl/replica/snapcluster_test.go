package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// A stepped cluster of replicas with snapshots on, for the tests of this
// package: every WAL step, job step and delivery is the test's, in a fixed
// order, so a test reads as a script. (Whole clusters under random faults
// run in conformance/sim.)

// hashSM is a state machine whose state is every entry's data in order and
// a running hash of them; its snapshot is the hash, the count and the data.
type hashSM struct {
	index, term uint64
	hash        uint64
	data        [][]byte
	restores    int
}

func (h *hashSM) Apply(e raft.Entry) []byte {
	if e.Index != h.index+1 {
		panic(fmt.Sprintf("hashSM: apply %d after %d", e.Index, h.index))
	}
	if raft.IsConfigEntry(e.Data) {
		panic(fmt.Sprintf("hashSM: the configuration entry %d reached the state machine", e.Index))
	}
	h.index, h.term = e.Index, e.Term
	f := fnv.New64a()
	_ = binary.Write(f, binary.LittleEndian, h.hash)
	f.Write(e.Data)
	h.hash = f.Sum64()
	h.data = append(h.data, e.Data)
	return e.Data
}

func (h *hashSM) Snapshot() (func(io.Writer) error, error) {
	index, term, hash, data := h.index, h.term, h.hash, slices.Clone(h.data)
	return func(w io.Writer) error {
		var b []byte
		b = binary.LittleEndian.AppendUint64(b, index)
		b = binary.LittleEndian.AppendUint64(b, term)
		b = binary.LittleEndian.AppendUint64(b, hash)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(data)))
		if _, err := w.Write(b); err != nil {
			return err
		}
		for _, d := range data {
			if _, err := w.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(d)))); err != nil {
				return err
			}
			if _, err := w.Write(d); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

func (h *hashSM) Restore(r io.Reader, index, term uint64) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(b) < 32 {
		return errors.New("hashSM: short snapshot")
	}
	le := binary.LittleEndian
	n := le.Uint64(b[24:])
	if le.Uint64(b) != index || le.Uint64(b[8:]) != term || n != index {
		return fmt.Errorf("hashSM: snapshot of %d/%d holds %d/%d and %d entries", term, index, le.Uint64(b[8:]), le.Uint64(b), n)
	}
	var data [][]byte
	p := b[32:]
	for range n {
		if len(p) < 4 || uint64(len(p)-4) < uint64(le.Uint32(p)) {
			return errors.New("hashSM: truncated snapshot")
		}
		k := le.Uint32(p)
		data, p = append(data, bytes.Clone(p[4:4+k])), p[4+k:]
	}
	h.index, h.term, h.hash, h.data = index, term, le.Uint64(b[16:]), data
	h.restores++
	return nil
}

// cnode is one member of a stepped cluster.
type cnode struct {
	id   raft.NodeID
	disk *vfs.MemFS
	w    *wal.WAL
	r    *Replica
	sm   *hashSM
	rec  *wal.Recovery
	out  []Message
	up   bool
	// jobStep, when set, decides whether a job's next step runs now (a
	// test holds a job between steps to crash there).
	jobStep func(j *Job) bool
	// jobBack, when set, decides whether a finished job is handed back now
	// (false: the hook crashed the node, before it was).
	jobBack func(j *Job) bool
	held    []*Job
}

func (n *cnode) Send(ms []Message) { n.out = append(n.out, ms...) }

type ccluster struct {
	t     *testing.T
	ids   []raft.NodeID
	nodes map[raft.NodeID]*cnode
	opts  SnapshotOptions
	// drop, when set, decides whether the network loses a message.
	drop        func(m *Message) bool
	delivered   int
	chunks      int // snapshot data chunks delivered
	leaderTerms map[uint64]raft.NodeID
	coreBugs    raft.Bug // the core's test switches of the nodes booted from now on
	// voters are the initial configuration (nil: every node); the others
	// join (raft.Config.Joining). members is each node's configuration in
	// force as Config.OnMembership last reported it.
	voters  []raft.NodeID
	members map[raft.NodeID]raft.Membership
}

var snapTestWAL = wal.Options{Stepped: true, SegmentBytes: 16 << 10, BlockBytes: 512, EntryBytesMax: 1 << 10, TailCacheBytes: 4 << 10}

func newCCluster(t *testing.T, n int, opts SnapshotOptions) *ccluster {
	return newCClusterVoters(t, n, n, opts)
}

// newCClusterVoters is newCCluster whose first voters nodes are the
// cluster; the others start outside it.
func newCClusterVoters(t *testing.T, n, voters int, opts SnapshotOptions) *ccluster {
	c := &ccluster{t: t, nodes: map[raft.NodeID]*cnode{}, opts: opts, leaderTerms: map[uint64]raft.NodeID{},
		members: map[raft.NodeID]raft.Membership{}}
	for k := 1; k <= n; k++ {
		c.ids = append(c.ids, raft.NodeID(k))
	}
	c.voters = c.ids[:voters]
	for _, id := range c.ids {
		nd := &cnode{id: id, disk: vfs.NewMemFS(vfs.MemConfig{Seed: uint64(id)})}
		c.nodes[id] = nd
		if err := c.boot(nd); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *ccluster) boot(n *cnode) error {
	o := snapTestWAL
	o.Clock, o.Logger = &fakeClock{now: time.Unix(1, 0)}, quiet
	w, rec, err := wal.Open(n.disk, "/d/wal", o)
	if err != nil {
		return err
	}
	n.sm = &hashSM{}
	so := c.opts
	so.FS, so.Dir = n.disk, "/d/snap"
	voters := c.voters
	if voters == nil {
		voters = c.ids
	}
	cfg := raft.Config{ID: n.id, Voters: voters, Joining: !slices.Contains(voters, n.id), ElectionTick: 10, HeartbeatTick: 1, Rand: rand.New(rand.NewPCG(uint64(n.id), 1)),
		PreVote: true, CheckQuorum: true, MsgEntriesMax: 64, TestingBugs: c.coreBugs}
	onMembership := func(m raft.Membership) {
		if c.members != nil {
			c.members[n.id] = m
		}
	}
	r, err := New(Config{Raft: cfg, WAL: w, Recovery: rec, StateMachine: n.sm, Transport: n, Logger: quiet, Snapshots: &so,
		OnMembership: onMembership})
	if err != nil {
		_ = w.Close()
		return err
	}
	n.w, n.r, n.rec, n.up, n.out, n.held = w, r, rec, true, nil, nil
	return nil
}

// crash is a power loss of n (unsynced writes lost as the disk's seed says).
func (c *ccluster) crash(n *cnode) {
	n.disk.Crash()
	n.up, n.r, n.w = false, nil, nil
	n.out, n.held = nil, nil
}

func (c *ccluster) restart(n *cnode) {
	n.disk.Restart()
	if err := c.boot(n); err != nil {
		c.t.Fatalf("n%d boot: %v", n.id, err)
	}
}

// settle runs WAL steps, jobs and deliveries until nothing is left.
func (c *ccluster) settle() {
	for round := 0; ; round++ {
		if round > 200000 {
			c.t.Fatal("ccluster: no quiescence")
		}
		busy := false
		for _, id := range c.ids {
			busy = c.work(c.nodes[id]) || busy
		}
		if !busy {
			return
		}
	}
}

// work does one node's pending disk work and delivers its messages.
func (c *ccluster) work(n *cnode) bool {
	if !n.up {
		return false
	}
	busy := false
	for k := 0; k < 64 && n.w.NextStep() != wal.StepNone; k++ {
		if err := n.w.Step(); err != nil {
			c.t.Fatalf("n%d WAL step: %v", n.id, err)
		}
		n.r.Handle(Event{Kind: EventWAL, Progress: n.w.Progress()})
		busy = true
	}
	for j := n.r.TakeJob(); j != nil; j = n.r.TakeJob() {
		n.held = append(n.held, j)
	}
	var still []*Job
	for _, j := range n.held {
		if n.jobStep != nil && !n.jobStep(j) {
			if !n.up {
				return true // the hook crashed the node
			}
			still = append(still, j)
			continue
		}
		busy = true
		if done, _ := j.Step(); !done {
			still = append(still, j)
		} else if n.jobBack == nil || n.jobBack(j) {
			n.r.Handle(Event{Kind: EventJob, Job: j})
		} else {
			return busy // the test crashes it now
		}
	}
	n.held = still
	c.observe(n)
	out := n.out
	n.out = nil
	for _, m := range out {
		busy = true
		c.deliver(m)
	}
	return busy
}

func (c *ccluster) deliver(m Message) {
	dst := c.nodes[m.To]
	if !dst.up || !c.nodes[m.From].up || (c.drop != nil && c.drop(&m)) {
		return
	}
	if m.Chunk != nil && m.Chunk.Kind == ChunkData {
		c.chunks++
	}
	c.delivered++
	dst.r.Handle(Event{Kind: EventMessage, Msg: m})
}

// observe checks election safety after every step of n.
func (c *ccluster) observe(n *cnode) {
	role, term, _ := n.r.Leadership()
	if role != raft.RoleLeader {
		return
	}
	if l, ok := c.leaderTerms[term]; ok && l != n.id {
		c.t.Fatalf("two leaders in term %d: n%d and n%d", term, l, n.id)
	}
	c.leaderTerms[term] = n.id
}

func (c *ccluster) tick(k int) {
	for range k {
		for _, id := range c.ids {
			if n := c.nodes[id]; n.up {
				n.r.Handle(Event{Kind: EventTick})
			}
		}
		c.settle()
	}
}

func (c *ccluster) leader() *cnode {
	for _, id := range c.ids {
		if n := c.nodes[id]; n.up {
			if role, _, _ := n.r.Leadership(); role == raft.RoleLeader {
				return n
			}
		}
	}
	return nil
}

func (c *ccluster) elect(id raft.NodeID) *cnode {
	c.settle()
	n := c.nodes[id]
	n.r.Handle(Event{Kind: EventCampaign})
	c.settle()
	if c.leader() != n {
		c.t.Fatalf("n%d not elected", id)
	}
	return n
}

// write proposes k entries at the leader, one per settle, and checks every
// answer.
func (c *ccluster) write(k int) {
	l := c.leader()
	if l == nil {
		c.t.Fatal("no leader")
	}
	for i := 0; i < k; i++ {
		data := []byte(fmt.Sprintf("w%06d-%s", l.sm.index+1, bytes.Repeat([]byte{'x'}, 24)))
		var res *Result
		l.r.Handle(Event{Kind: EventPropose, Proposals: []Proposal{{Data: data, Done: func(r Result) { res = &r }}}})
		c.settle()
		if res == nil || res.Err != nil {
			c.t.Fatalf("write %d: %+v", i, res)
		}
	}
}

// sameState: every live node has applied the same entries as the leader.
func (c *ccluster) sameState() {
	c.tick(2) // followers learn the last commit index with the next heartbeat
	l := c.leader()
	for _, id := range c.ids {
		n := c.nodes[id]
		if !n.up || n == l {
			continue
		}
		if n.sm.index != l.sm.index || n.sm.hash != l.sm.hash {
			c.t.Fatalf("n%d at %d (hash %x), leader n%d at %d (hash %x)", id, n.sm.index, n.sm.hash, l.id, l.sm.index, l.sm.hash)
		}
	}
}
