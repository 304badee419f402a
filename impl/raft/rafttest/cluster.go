package rafttest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/trace"
)

// SimWAL is a node's disk: what was written (readable at once, like a page
// cache) and how much of it is fdatasync'd. Hard state and suffix
// truncations are durable when written (the driver contract of raft.Ready),
// except that with raft.BugTruncationNotSynced a truncation waits for the
// next flush.
type SimWAL struct {
	Log     *raft.MemoryStorage
	Durable uint64
	HS      raft.HardState
	Failed  bool // the next flush fails (fdatasync EIO)
	// Stale, with raft.BugTruncationNotSynced: the durable log before a
	// truncation that no flush has synced yet (nil: none), which a crash may
	// bring back (spec staleLog).
	Stale *raft.MemoryStorage
	// PrevHS is the hard state before the last write (what a WAL that lost
	// its newest copy may give back); HSLost is the WAL's loss mark (impl/wal
	// rows H2, H6, H7, H8): sticky, every boot is told Boot.HardStateLost.
	PrevHS raft.HardState
	HSLost bool
	// Commit is the learned commit index written with the log (impl/wal's
	// batches carry it), CommitDurable the one a flush made durable: a
	// boot learns the larger of it and HS.LearnedCommit (the core hands a
	// change of it alone out as no hard state).
	Commit, CommitDurable uint64
}

// SimNode is one member: its disk, and its process when up.
type SimNode struct {
	ID      raft.NodeID
	WAL     *SimWAL
	Node    *raft.Node // nil while down
	Applied uint64     // what its state machine applied (survives restarts)
	boots   int
	last    raft.Status // the status last reported
	// stopDurable is the node's durable index when it stopped: the spec's
	// durableLen until its reboot is traced.
	stopDurable uint64
}

// Options configure a cluster.
type Options struct {
	N           int
	Seed        uint64
	PreVote     bool
	CheckQuorum bool
	LeaseRead   bool
	Bugs        raft.Bug
	// MsgEntriesMax, InflightMsgsMax: small values exercise batching and
	// flow control.
	MsgEntriesMax, InflightMsgsMax int
	// InflightBytesMax: the bytes window (0: the default).
	InflightBytesMax            uint64
	ElectionTick, HeartbeatTick int
	Trace                       bool
	// NodeConfig, when set, adjusts each node's configuration (per-node
	// limits: a rolling configuration change).
	NodeConfig func(cfg *raft.Config)
	// TraceNames names the nodes in the trace (raft.Config.TraceNames);
	// nil is s<id>.
	TraceNames map[raft.NodeID]string
	// BadCommits is how many messages CorruptLeaderCommit may change: the
	// spec's budget in the trace's config.
	BadCommits int
	// PowerLosses is how many PowerLoss boots the run may take (the trace's
	// budget; rafttest's power-loss).
	PowerLosses int
	// Membership: configurations are log entries (ChangeConfig) and the
	// trace says so; nodes 1..InitVoters are the initial voters (0: all),
	// the others start outside the cluster (raft.Config.Joining) until a
	// leader adds them.
	Membership bool
	InitVoters int
	// AutoPromote: raft.Config.AutoPromote on every node.
	AutoPromote bool
	// PeerRepair: raft.Config.PeerRepair on every node (a TRUNCATED member
	// without a leader repairs itself from its peers).
	PeerRepair bool
}

// acked is an entry a client was told is committed.
type acked struct {
	term       uint64
	data       string
	commitTerm uint64 // the first leader term in which it was seen committed
}

// Cluster is the simulated cluster.
type Cluster struct {
	Opts  Options
	Nodes []*SimNode // index id-1
	Net   []raft.Message
	// Blocked[from][to]: the link drops everything.
	Blocked map[[2]raft.NodeID]bool

	Events     []trace.Event
	Out        strings.Builder // what scenario commands print
	Violations []string

	rng        *rand.Rand
	acks       map[uint64]acked         // index -> acknowledged entry
	commitConf map[uint64][]raft.NodeID // index -> voters of the configuration it was committed in (membership)
	leaders    map[uint64]raft.NodeID   // term -> leader ever elected
	applied    map[uint64]string        // index -> "term/data" applied anywhere
	reads      map[string]uint64        // ctx -> the highest acknowledged index when the read was asked
	badCommits int                      // CorruptLeaderCommit steps taken
	// Counts of what happened, for the randomized runs' coverage checks.
	ReadsAnswered int
	// HardStateLosses counts LoseHardState; PassiveReports the
	// MsgAppRespPassive delivered to a running node.
	HardStateLosses, PassiveReports int
	// ConfigChanges counts the configuration changes a leader accepted,
	// ChangeKinds them by kind.
	ConfigChanges int
	ChangeKinds   map[raft.ConfChangeKind]int
	crashes       int
	corrupts      int
	powerLosses   int
}

// NewCluster starts n fresh nodes.
func NewCluster(o Options) (*Cluster, error) {
	if o.N < 1 || o.N > 9 {
		return nil, fmt.Errorf("rafttest: %d nodes, want 1..9", o.N)
	}
	c := &Cluster{Opts: o, Blocked: map[[2]raft.NodeID]bool{}, rng: rand.New(rand.NewPCG(o.Seed, 0x5eed)),
		acks: map[uint64]acked{}, commitConf: map[uint64][]raft.NodeID{}, leaders: map[uint64]raft.NodeID{}, applied: map[uint64]string{}, reads: map[string]uint64{}}
	for id := 1; id <= o.N; id++ {
		c.Nodes = append(c.Nodes, &SimNode{ID: raft.NodeID(id), WAL: &SimWAL{Log: raft.NewMemoryStorage()}})
	}
	if o.Trace {
		tc, err := raft.TraceConfig(raft.TraceParams{Voters: c.voters(), Names: o.TraceNames, Bugs: o.Bugs, BadCommits: o.BadCommits, PowerLosses: o.PowerLosses, Repair: o.PeerRepair,
			Membership: o.Membership, InitVoters: o.InitVoters})
		if err != nil {
			return nil, err
		}
		c.Events = append(c.Events, trace.Event{V: trace.Version, Action: "Init", Config: tc})
	}
	for _, sn := range c.Nodes {
		if err := c.start(sn, raft.VerdictClean); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// sink appends a node's events to the cluster's trace.
type sink struct{ c *Cluster }

func (s sink) Event(e trace.Event) { s.c.addEvent(e) }

func (c *Cluster) addEvent(e trace.Event) {
	e.V, e.Seq = trace.Version, len(c.Events)
	c.Events = append(c.Events, e)
}

func (c *Cluster) voters() []raft.NodeID {
	var ids []raft.NodeID
	for _, sn := range c.Nodes {
		ids = append(ids, sn.ID)
	}
	return ids
}

// initVoters is the initial configuration: nodes 1..InitVoters, or all.
func (c *Cluster) initVoters() []raft.NodeID {
	ids := c.voters()
	if c.Opts.InitVoters > 0 && c.Opts.InitVoters < len(ids) {
		ids = ids[:c.Opts.InitVoters]
	}
	return ids
}

// config is the node configuration of the cluster.
func (c *Cluster) config(sn *SimNode) raft.Config {
	o := c.Opts
	cfg := raft.Config{ID: sn.ID, Voters: c.initVoters(), Joining: !slices.Contains(c.initVoters(), sn.ID), ElectionTick: o.ElectionTick, HeartbeatTick: o.HeartbeatTick,
		Rand:    rand.New(rand.NewPCG(o.Seed^uint64(sn.ID)<<32, uint64(sn.boots))),
		PreVote: o.PreVote, CheckQuorum: o.CheckQuorum, LeaseRead: o.LeaseRead, AutoPromote: o.AutoPromote, PeerRepair: o.PeerRepair,
		MsgEntriesMax: o.MsgEntriesMax, InflightMsgsMax: o.InflightMsgsMax, InflightBytesMax: o.InflightBytesMax,
		Storage: sn.WAL.Log, TestingBugs: o.Bugs}
	if cfg.ElectionTick == 0 {
		cfg.ElectionTick = 10
	}
	if o.Trace {
		cfg.Trace, cfg.TraceNames = sink{c}, o.TraceNames
	}
	if o.NodeConfig != nil {
		o.NodeConfig(&cfg)
	}
	return cfg
}

func (c *Cluster) start(sn *SimNode, v raft.Verdict) error {
	if err := c.boot(sn, v); err != nil {
		return err
	}
	c.handle(sn)
	return nil
}

// boot makes sn's process from its disk, without handling its first Ready.
func (c *Cluster) boot(sn *SimNode, v raft.Verdict) error {
	w := sn.WAL
	hs := w.HS
	hs.LearnedCommit = max(hs.LearnedCommit, w.CommitDurable)
	w.Commit = hs.LearnedCommit
	n, err := raft.NewNode(c.config(sn), raft.Boot{HardState: hs, Verdict: v, HardStateLost: w.HSLost, Applied: sn.Applied})
	if err != nil {
		return err
	}
	sn.boots++
	sn.Node = n
	sn.last = n.Status()
	return nil
}

// Node returns the member with id, or nil.
func (c *Cluster) Node(id raft.NodeID) *SimNode {
	if id < 1 || int(id) > len(c.Nodes) {
		return nil
	}
	return c.Nodes[id-1]
}

func (c *Cluster) logf(format string, args ...any) { fmt.Fprintf(&c.Out, format+"\n", args...) }

// handle processes every Ready of sn: the driver of raft.Ready, done
// atomically (no crash can fall between a node's step and the
// persistence of its Ready, which it reports at once: Persisted).
func (c *Cluster) handle(sn *SimNode) {
	for sn.Node != nil && sn.Node.HasReady() {
		rd := sn.Node.Ready()
		w := sn.WAL
		if rd.HardStateChanged {
			w.PrevHS, w.HS = w.HS, rd.HardState
		}
		w.Commit = max(w.Commit, rd.LearnedCommit)
		if rd.TruncateFrom > 0 {
			if c.Opts.Bugs&raft.BugTruncationNotSynced != 0 && w.Stale == nil && w.Durable >= rd.TruncateFrom {
				w.Stale = w.Log.Clone()
				w.Stale.Prefix(w.Durable)
			}
			if err := w.Log.Truncate(rd.TruncateFrom); err != nil {
				panic(err)
			}
			w.Durable = min(w.Durable, rd.TruncateFrom-1)
		}
		if err := w.Log.Append(rd.Entries); err != nil {
			panic(err)
		}
		sn.Node.Persisted()
		c.Net = append(c.Net, rd.Messages...)
		c.Net = append(c.Net, rd.MessagesAfterPersist...)
		for _, e := range rd.Committed {
			c.apply(sn, e)
		}
		for _, rs := range rd.ReadStates {
			c.logf("n%d read %q at index %d", sn.ID, rs.Context, rs.Index)
			c.answerRead(rs)
		}
		for _, a := range rd.Alerts {
			c.logf("n%d ALERT %v", sn.ID, a)
		}
	}
	if sn.Node != nil {
		c.reportChange(sn)
	}
}

// reportChange prints role, term and fence changes.
func (c *Cluster) reportChange(sn *SimNode) {
	before, after := sn.last, sn.Node.Status()
	sn.last = after
	if after.Role != before.Role || after.HardState.Term != before.HardState.Term {
		c.logf("n%d is %v at term %d", sn.ID, after.Role, after.HardState.Term)
	}
	if after.Role == raft.RoleLeader {
		if l, ok := c.leaders[after.HardState.Term]; ok && l != sn.ID {
			c.violation("ElectionSafety: term %d elected n%d and n%d", after.HardState.Term, l, sn.ID)
		}
		c.leaders[after.HardState.Term] = sn.ID
	}
}

// apply hands a committed entry to sn's state machine and records the
// client acknowledgment.
func (c *Cluster) apply(sn *SimNode, e raft.Entry) {
	if e.Index <= sn.Applied {
		c.violation("n%d re-applied entry %d (applied %d)", sn.ID, e.Index, sn.Applied)
	}
	sn.Applied = e.Index
	key := fmt.Sprintf("%d/%s", e.Term, e.Data)
	if raft.IsConfigEntry(e.Data) {
		m, _ := raft.DecodeMembership(e.Data)
		key = fmt.Sprintf("%d/config %v", e.Term, m)
	}
	if prev, ok := c.applied[e.Index]; ok && prev != key {
		c.violation("StateMachineSafety: index %d applied as %s and as %s", e.Index, prev, key)
	}
	c.applied[e.Index] = key
	switch {
	case raft.IsConfigEntry(e.Data):
		m, _ := raft.DecodeMembership(e.Data)
		c.logf("n%d applied %d/%d config %v", sn.ID, e.Term, e.Index, m)
	case len(e.Data) > 0:
		c.logf("n%d applied %d/%d %s", sn.ID, e.Term, e.Index, e.Data)
	}
	if _, ok := c.commitConf[e.Index]; !ok && c.Opts.Membership {
		// The first to apply is the leader that committed it, in the same
		// step: the configuration it counted its quorum in.
		c.commitConf[e.Index] = sn.Node.Membership().Voters
	}
	a, ok := c.acks[e.Index]
	if !ok {
		a = acked{term: e.Term, data: string(e.Data), commitTerm: ^uint64(0)}
	}
	if sn.Node.Status().Role == raft.RoleLeader {
		a.commitTerm = min(a.commitTerm, sn.Node.Status().HardState.Term)
	}
	c.acks[e.Index] = a
}

// ReadIndex asks id for a linearizable read. The answer must cover every
// entry acknowledged before the question (Linearizability of reads).
func (c *Cluster) ReadIndex(id raft.NodeID, ctx string) error {
	sn := c.Node(id)
	if sn == nil || sn.Node == nil {
		return fmt.Errorf("n%d is down", id)
	}
	c.reads[ctx] = c.maxAcked()
	err := sn.Node.ReadIndex([]byte(ctx))
	c.handle(sn)
	return err
}

func (c *Cluster) maxAcked() uint64 {
	var m uint64
	for i := range c.acks {
		m = max(m, i)
	}
	return m
}

func (c *Cluster) answerRead(rs raft.ReadState) {
	c.ReadsAnswered++
	if want, ok := c.reads[string(rs.Context)]; ok && rs.Index < want {
		c.violation("ReadIndex: read %q answered at index %d, below the acknowledged index %d at the time of the read", rs.Context, rs.Index, want)
	}
}

func (c *Cluster) violation(format string, args ...any) {
	v := fmt.Sprintf(format, args...)
	c.Violations = append(c.Violations, v)
	c.logf("VIOLATION %s", v)
}

// Settle hands every node's pending Ready to the driver.
func (c *Cluster) Settle() {
	for _, sn := range c.Nodes {
		c.handle(sn)
	}
}

// up lists the running nodes.
func (c *Cluster) up() []*SimNode {
	var out []*SimNode
	for _, sn := range c.Nodes {
		if sn.Node != nil {
			out = append(out, sn)
		}
	}
	return out
}

// Leader returns the running leader with the highest term, or nil.
func (c *Cluster) Leader() *SimNode {
	var best *SimNode
	for _, sn := range c.up() {
		st := sn.Node.Status()
		if st.Role == raft.RoleLeader && (best == nil || st.HardState.Term > best.Node.Status().HardState.Term) {
			best = sn
		}
	}
	return best
}

// sortedIndexes lists the acknowledged indexes in order.
func (c *Cluster) sortedIndexes() []uint64 {
	idx := make([]uint64, 0, len(c.acks))
	for i := range c.acks {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	return idx
}

// CheckInvariants checks the cluster after a step:
//   - AckedDurable: every entry a client was told is committed is in the
//     durable prefix of a majority, counting TRUNCATED members (whose copy
//     a corruption may have taken) as holders, as the spec does, and
//     members whose hard state was lost (they vote no more, so what their
//     log lost matters to no election: a stale leader may overwrite it);
//   - NoAckedLoss: every running leader of a later term holds it.
//
// ElectionSafety and StateMachineSafety are checked as they happen.
func (c *Cluster) CheckInvariants() {
	for _, i := range c.sortedIndexes() {
		a := c.acks[i]
		holders, voters := 0, c.voters()
		if v, ok := c.commitConf[i]; ok {
			voters = v
		}
		q := len(voters)/2 + 1
		for _, sn := range c.Nodes {
			if !slices.Contains(voters, sn.ID) {
				continue
			}
			t, err := sn.WAL.Log.Term(i)
			if (err == nil && t == a.term && sn.WAL.Durable >= i) || sn.WAL.HS.TruncatedAtTerm != 0 || sn.WAL.HSLost {
				holders++
			}
		}
		if holders < q {
			c.violation("AckedDurable: acknowledged entry %d/%d is durable on %d of the %d voters it was committed by", a.term, i, holders, len(voters))
		}
		for _, sn := range c.up() {
			st := sn.Node.Status()
			if st.Role != raft.RoleLeader || st.HardState.Term <= a.commitTerm {
				continue
			}
			if t, err := sn.WAL.Log.Term(i); err != nil || t != a.term {
				c.violation("NoAckedLoss: leader n%d of term %d lacks acknowledged entry %d/%d", sn.ID, st.HardState.Term, a.term, i)
			}
		}
	}
}

// describe prints a node's state in one line.
func describe(sn *SimNode) string {
	if sn.Node == nil {
		return fmt.Sprintf("n%d: down (disk: last %d durable %d term %d)", sn.ID, sn.WAL.Log.LastIndex(), sn.WAL.Durable, sn.WAL.HS.Term)
	}
	st := sn.Node.Status()
	s := fmt.Sprintf("n%d: %v term=%d vote=%d lead=%d last=%d durable=%d commit=%d applied=%d learned=%d verdict=%s fence=%s(row %s)",
		sn.ID, st.Role, st.HardState.Term, st.HardState.Vote, st.Lead, st.Last, st.Durable, st.Commit, st.Applied,
		st.HardState.LearnedCommit, st.Verdict, st.Fence, st.FenceRow)
	if st.Fence == raft.OutcomeEligible && st.Durable < st.HardState.LearnedCommit {
		s += fmt.Sprintf(" lagging=%d", st.LagTicks) // behind, not (yet) fenced
	}
	if st.WALFailed {
		s += " WAL-FAILED"
	}
	if st.HardStateLost {
		s += " HARD-STATE-LOST"
	}
	return s
}

// describeLog prints a node's log as term/index pairs, durable ones first.
func describeLog(sn *SimNode) string {
	var b strings.Builder
	fmt.Fprintf(&b, "n%d log:", sn.ID)
	last := sn.WAL.Log.LastIndex()
	for i := uint64(1); i <= last; i++ {
		t, _ := sn.WAL.Log.Term(i)
		mark := ""
		if i > sn.WAL.Durable {
			mark = "*"
		}
		fmt.Fprintf(&b, " %d/%d%s", t, i, mark)
	}
	if last == 0 {
		b.WriteString(" empty")
	}
	return b.String()
}

// msgKeys orders messages for printing.
func sortMsgs(ms []raft.Message) {
	sort.SliceStable(ms, func(a, b int) bool { return ms[a].To < ms[b].To })
}
