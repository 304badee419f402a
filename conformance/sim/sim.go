package sim

import (
	"container/heap"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kv/kvtest"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/trace"
)

// Options shape one simulated run.
type Options struct {
	N    int
	Seed uint64
	// Duration is the virtual time of the fault phase; the healing phase
	// that follows is bounded by HealMax.
	Duration, HealMax time.Duration
	// Tick is one protocol tick of virtual time; nodes' clocks drift by up
	// to Skew (a fraction, e.g. 0.05) from it.
	Tick time.Duration
	Skew float64
	// Faults switches fault kinds on; Rates says how often they strike.
	Faults Faults
	Rates  Rates
	// Client load: a write every ProposeEvery (virtual, on average), a
	// read every ReadEvery, from a random client with a free slot; zero
	// turns them off. Driven: no random load (a caller starts operations,
	// Sim.Start).
	ProposeEvery, ReadEvery time.Duration
	Driven                  bool
	// The clients (client.go): Clients of them, the first
	// SessionlessClients without a kv session, each with up to Pipeline
	// operations in flight, over Keys keys; an attempt times out after
	// AttemptTimeout, an operation after OpTimeout; StallChance is the
	// chance that a client pauses for longer than SessionTimeout after
	// starting an operation.
	Clients, SessionlessClients, Pipeline, Keys int
	AttemptTimeout, OpTimeout, SessionTimeout   time.Duration
	StallChance                                 float64
	// IdleNoop: a leader that proposed nothing for this long proposes a
	// kv no-op (0: never).
	IdleNoop time.Duration
	// Core options.
	PreVote, CheckQuorum           bool
	MsgEntriesMax, InflightMsgsMax int
	CoreBugs                       raft.Bug
	RuntimeBugs                    replica.Bug
	KVBugs                         kv.Bug
	ServerBugs                     ServerBug
	// Snapshots turns snapshots and compaction on (nil: off); FS and Dir
	// are each node's (its disk, snapDir).
	Snapshots *replica.SnapshotOptions `json:",omitempty"`
	// SegmentBytes, when set, is the WAL's segment size (and a quarter of
	// it the entry bound): compaction frees whole segments.
	SegmentBytes int64 `json:",omitempty"`
	// Membership: nodes 1..InitVoters start as the cluster and the others
	// outside it, and a fault kind asks the leader for single-server
	// changes (membership.go). Bit flips must be off: their budget (a
	// quorum of every configuration able to vote) is not tracked across
	// configurations.
	Membership bool `json:",omitempty"`
	InitVoters int  `json:",omitempty"`
	// PeerRepair: raft.Config.PeerRepair on every node (false:
	// replica.Config.NoPeerRepair), and bit flips on any set of members
	// that is not a quorum (repair.go). On in Default, as in raftd; not
	// with Membership (the spec's -repair has no membership yet).
	PeerRepair bool `json:",omitempty"`
	// Trace collects the run's trace (every node's core events and the
	// network's own steps).
	Trace bool
	// Log, when set, receives a line per notable step; with ReplicaLogs
	// also every replica's own log lines.
	Log         func(string) `json:"-"`
	ReplicaLogs bool
}

// Faults are the fault kinds a run may inject.
type Faults struct {
	Drops, Dups, Delays, Partitions bool
	// Crashes: power loss of a node at a random moment or at a random I/O
	// point (lost unsynced writes, torn writes), then a restart.
	Crashes bool
	// Flips: bit flips at rest in a minority, in durable records other than
	// the last synced batch (hole 2 of the holes issue keeps that batch out).
	Flips bool
	// SyncErrors: an fdatasync fails with EIO; DiskFull: writes fail with
	// ENOSPC for a while. Both fail the WAL; the node is restarted later.
	SyncErrors, DiskFull bool
	// SlowSyncs: an fdatasync takes up to three election timeouts.
	SlowSyncs bool
	// LateNotify: WAL progress reaches the replica late (after other
	// inputs), as an asynchronous notification can.
	LateNotify bool
	// WireFlips: a bit of a shipped entry flips in transit after the
	// transport's checksum (the receiver's record verification must refuse
	// it).
	WireFlips bool
	// ClusterPowerLoss: every node loses power at once, and before it the
	// last synced batch of some is damaged at rest, within the spec's budget
	// (powerloss.go; not with Membership nor PeerRepair: the spec's
	// PowerLoss has neither).
	ClusterPowerLoss bool
}

// Rates are the probabilities and intervals of the faults.
type Rates struct {
	// Per message: dropped, delayed long (1 ms to DelayMax, default 50 ms),
	// duplicated, flipped on the wire.
	Drop, Delay, Dup, WireFlip float64
	DelayMax                   time.Duration
	// Per fdatasync: slow (50 ms to three election timeouts).
	SlowSync float64
	// Per WAL progress report: late, by up to LateNotifyMax.
	LateNotify    float64
	LateNotifyMax time.Duration
	// FaultEvery is the mean interval between crashes, disk faults and
	// partitions.
	FaultEvery time.Duration
}

func (r Rates) delayMax() time.Duration {
	if r.DelayMax > time.Millisecond {
		return r.DelayMax
	}
	return 50 * time.Millisecond
}

// BaseRates are the rates the swarm scales.
var BaseRates = Rates{Drop: 0.02, Delay: 0.05, Dup: 0.01, WireFlip: 0.01, SlowSync: 0.01,
	LateNotify: 0.05, LateNotifyMax: 3 * time.Millisecond, FaultEvery: 160 * time.Millisecond}

// SwarmRates draws a seed's own fault mix (swarm testing, as TigerBeetle's
// VOPR does): each rate is the base rate scaled by 1/4, 1 or 4, so that
// different seeds stress different corners.
func SwarmRates(seed uint64) Rates {
	rng := rand.New(rand.NewPCG(seed, 0x5a4a))
	scale := func() float64 { return [...]float64{0.25, 1, 4}[rng.IntN(3)] }
	r := BaseRates
	r.Drop *= scale()
	r.Delay *= scale()
	r.Dup *= scale()
	r.WireFlip *= scale()
	r.SlowSync *= scale()
	r.LateNotify = [...]float64{0.02, 0.1, 0.5}[rng.IntN(3)]
	r.LateNotifyMax = [...]time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}[rng.IntN(3)]
	r.FaultEvery = time.Duration(float64(r.FaultEvery) * scale())
	return r
}

// AllFaults turns every fault kind on (whole-cluster power losses too,
// since marked votes closed the liveness hole they showed: issue 10 item
// 2, docs/durable-raft.md).
func AllFaults() Faults {
	return Faults{Drops: true, Dups: true, Delays: true, Partitions: true, Crashes: true, Flips: true,
		SyncErrors: true, DiskFull: true, SlowSyncs: true, LateNotify: true, WireFlips: true, ClusterPowerLoss: true}
}

// Default is the fault mix and load of the randomized runs for a seed.
func Default(seed uint64) Options {
	return Options{N: 3 + int(seed%3), Seed: seed, Duration: 3 * time.Second, HealMax: 20 * time.Second,
		Tick: 10 * time.Millisecond, Skew: 0.05, Faults: AllFaults(), Rates: SwarmRates(seed),
		ProposeEvery: 4 * time.Millisecond, ReadEvery: 20 * time.Millisecond,
		Clients: 4 + int(seed/3%4), SessionlessClients: int(seed/12%4) / 3, Pipeline: 1 + int(seed/48%4), Keys: 3 + int(seed/144%4),
		AttemptTimeout: 300 * time.Millisecond, OpTimeout: 2 * time.Second, SessionTimeout: 2 * time.Second, StallChance: 0.003,
		IdleNoop: 200 * time.Millisecond,
		PreVote:  seed%2 == 0, CheckQuorum: seed%4 < 2, MsgEntriesMax: 4 << (seed % 4), InflightMsgsMax: 1 + int(seed%4), Trace: true,
		Snapshots: SnapshotDefaults(seed), PeerRepair: true}
}

// Sim is one simulated cluster: replicas in stepped mode over the real WAL
// on in-memory disks, an in-memory network, and a virtual clock, all on
// one goroutine. Everything random comes from the seed: a seed replays the
// same run, byte for byte.
type Sim struct {
	opts  Options
	rng   *rand.Rand
	now   time.Duration
	queue eventQueue
	seq   uint64
	Nodes []*Node
	net   network

	Events []trace.Event
	// TraceCheckable is how much of Events the spec can check (-1: all):
	// a WAL failure that undid a step of the core ends it.
	TraceCheckable int
	Violations     []string
	check          checker
	Counts         Counts
	// The clients, the history of their operations, and the requests of
	// their sessions (for the at-most-once checker).
	clients  []*client
	history  []HistoryOp
	requests []*kvtest.Request
	seen     map[string]seenKey
	runTime  time.Duration
	// healing: the fault phase is over; no new faults or client load.
	healing bool
}

// Counts say what a run did, for coverage checks.
type Counts struct {
	Delivered, Dropped, Duplicated, Proposals, Acked, Reads, ReadsServed                                      int
	Crashes, IOCrashes, Restarts, Flips, SyncErrors, DiskFull, SlowSyncs, Partitions, LateNotifies, WireFlips int
	Elections, VerdictTruncated, StaleReports, LostSteps                                                      int
	// Whole-cluster power losses (powerloss.go), the last synced batches
	// they damaged, and the boots whose WAL verdict was AMBIGUOUS.
	ClusterPowerLosses, SyncedBatchFlips, VerdictAmbiguous int
	// Snapshots (SnapshotsMade and the rest are summed over every life of
	// every node): restores of a state machine, bit flips in snapshot files.
	SnapshotsMade, Installs, Compactions, ChunksSent, TransferRestarts, SnapshotRefused, Restores, SnapshotFlips int
	DropsInjected, Delayed, PowerLosses, SkewedClocks                                                            int
	// The clients and the service.
	ClientWrites, ClientReads, Unknown, UnknownNoSession, UnknownExpired, UnknownDeadline, ClientRetries, ClientTimeouts, ClientDeadlines, ClientDrops, ClientDups, DupNoSession, ClientBusy int
	Sessions, SessionExpired, KeepAlives, ClientStalls, IdleNoops, EarlyAcks, Deduplicated                                                                                                   int
	// ConfigChanges counts the membership changes applied (Membership).
	ConfigChanges int
}

// Add adds b's counts to c's.
func (c *Counts) Add(b Counts) {
	x, y := reflect.ValueOf(c).Elem(), reflect.ValueOf(b)
	for k := 0; k < x.NumField(); k++ {
		x.Field(k).SetInt(x.Field(k).Int() + y.Field(k).Int())
	}
}

// New builds a cluster of fresh nodes and boots them.
func New(o Options) (*Sim, error) {
	if o.N < 1 || o.N > 9 {
		return nil, fmt.Errorf("sim: %d nodes, want 1..9", o.N)
	}
	if o.Tick <= 0 {
		o.Tick = 10 * time.Millisecond
	}
	if o.Membership && (o.Faults.Flips || o.PeerRepair || o.Faults.ClusterPowerLoss || o.InitVoters < 1 || o.InitVoters > o.N || o.N > 5) {
		return nil, fmt.Errorf("sim: membership with bit flips, peer repair or whole-cluster power losses, %d initial voters of %d nodes (1..N, N <= 5)", o.InitVoters, o.N)
	}
	s := &Sim{opts: o, rng: rand.New(rand.NewPCG(o.Seed, 0x51a1)), TraceCheckable: -1, seen: map[string]seenKey{}}
	s.check.init(s)
	s.net.init(s)
	if o.Trace {
		tp := raft.TraceParams{Voters: s.voters(), Bugs: o.CoreBugs, Membership: o.Membership, InitVoters: o.InitVoters, Repair: o.PeerRepair}
		if !o.Membership && o.CoreBugs&(raft.BugAmbiguousTailClean|raft.BugAmbiguousWithholdsVote) != 0 {
			tp.PowerLosses = raft.DefaultTraceBudget // declared from the start: the switches need it
		}
		cfg, err := raft.TraceConfig(tp)
		if err != nil {
			return nil, err
		}
		s.Events = append(s.Events, trace.Event{V: trace.Version, Action: "Init", Config: cfg})
	}
	for id := 1; id <= o.N; id++ {
		s.Nodes = append(s.Nodes, newNode(s, raft.NodeID(id)))
	}
	for _, n := range s.Nodes {
		if err := n.boot(); err != nil {
			return nil, err
		}
		n.scheduleTick()
	}
	return s, nil
}

// Node returns the member with id.
func (s *Sim) Node(id raft.NodeID) *Node { return s.Nodes[id-1] }

// Now is the virtual time.
func (s *Sim) Now() time.Duration { return s.now }

func (s *Sim) logf(format string, args ...any) {
	if s.opts.Log != nil {
		s.opts.Log(fmt.Sprintf("%10v ", s.now) + fmt.Sprintf(format, args...))
	}
}

// addEvent appends a trace event (the cores' and the network's, in the
// order they happen).
func (s *Sim) addEvent(e trace.Event) {
	e.V, e.Seq = trace.Version, len(s.Events)
	s.Events = append(s.Events, e)
}

// at schedules f at virtual time now+d.
func (s *Sim) at(d time.Duration, f func()) {
	s.seq++
	heap.Push(&s.queue, &simEvent{at: s.now + d, seq: s.seq, run: f})
}

// step runs the next event; false when none is left before until.
func (s *Sim) step(until time.Duration) bool {
	if s.queue.Len() == 0 || s.queue[0].at > until {
		return false
	}
	ev := heap.Pop(&s.queue).(*simEvent)
	s.now = ev.at
	ev.run()
	return true
}

// Run runs the fault phase, then heals every fault and runs until the
// cluster has a leader that committed an entry of its term and every
// client operation is answered, or HealMax passes (a liveness violation).
func (s *Sim) Run() error {
	s.startLoad()
	s.startFaults()
	end := s.opts.Duration
	for len(s.Violations) == 0 && s.step(end) {
		s.check.afterStep()
	}
	if len(s.Violations) > 0 {
		return nil
	}
	return s.heal()
}

// heal ends the faults and checks liveness.
func (s *Sim) heal() error {
	s.net.heal()
	s.faultsOff()
	for _, n := range s.Nodes {
		n.healDisk()
		if n.walFailed() || (n.r != nil && n.r.Status().Failure != "") {
			n.crash("heal: restart after a WAL failure")
		}
		if n.r == nil {
			n.restart("heal")
		}
	}
	deadline := s.now + s.opts.HealMax
	for len(s.Violations) == 0 && s.now < deadline {
		if !s.step(deadline) {
			break
		}
		s.check.afterStep()
		if !s.check.finalAcked && s.check.finalPending == 0 {
			if l := s.leader(); l != nil && l.committedOwnTerm() {
				l.proposeFinal()
			}
		}
		if s.check.finalAcked && s.check.pendingOps() == 0 && s.clientsIdle() && s.caughtUp() {
			s.check.atEnd()
			for _, n := range s.Nodes {
				if n.r != nil {
					s.noteSnapshots(n.r.Status().Snapshots)
				}
			}
			if len(s.Violations) == 0 {
				s.checkKV()
			}
			return nil
		}
	}
	if len(s.Violations) > 0 {
		return nil
	}
	var st []string
	for _, n := range s.Nodes {
		st = append(st, n.describe())
	}
	s.violation("Liveness: %v after the faults healed, no leader committed a final entry with every operation answered and every replica caught up (final acknowledged %v, %d replica operations and %d client operations pending): %s",
		s.opts.HealMax, s.check.finalAcked, s.check.pendingOps(), s.clientsBusy(), strings.Join(st, "; "))
	return nil
}

// leader is the live leader of the highest term, or nil.
func (s *Sim) leader() *Node {
	var best *Node
	var bestTerm uint64
	for _, n := range s.Nodes {
		if n.r == nil {
			continue
		}
		st := n.r.Status()
		if st.Role == raft.RoleLeader && st.HardState.Term > bestTerm {
			best, bestTerm = n, st.HardState.Term
		}
	}
	return best
}

func (s *Sim) violation(format string, args ...any) {
	v := fmt.Sprintf(format, args...)
	s.Violations = append(s.Violations, v)
	s.logf("VIOLATION %s", v)
}

// randDur is a uniform duration in [lo, hi).
func (s *Sim) randDur(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// chance is true with probability p.
func (s *Sim) chance(p float64) bool { return s.rng.Float64() < p }

type simEvent struct {
	at  time.Duration
	seq uint64
	run func()
}

// eventQueue orders events by time, then by scheduling order: ties never
// depend on anything but the seed.
type eventQueue []*simEvent

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(a, b int) bool {
	return q[a].at < q[b].at || (q[a].at == q[b].at && q[a].seq < q[b].seq)
}
func (q eventQueue) Swap(a, b int) { q[a], q[b] = q[b], q[a] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// CheckableEvents is the part of the trace the spec can check.
func (s *Sim) CheckableEvents() []trace.Event {
	if s.TraceCheckable >= 0 {
		return s.Events[:s.TraceCheckable]
	}
	return s.Events
}

// Fingerprint hashes what a run produced: its trace and every node's disk
// image (file names and page-cache bytes). The same seed must give the
// same fingerprint in any process.
func (s *Sim) Fingerprint() (string, error) {
	h := sha256.New()
	for _, e := range s.Events {
		b, err := json.Marshal(e)
		if err != nil {
			return "", err
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	for _, n := range s.Nodes {
		for _, dir := range []string{dataDir, snapDir} {
			names, err := n.disk.List(dir)
			if err != nil && dir == dataDir {
				return "", err
			}
			slices.Sort(names)
			for _, name := range names {
				img, err := n.disk.ReadFile(path.Join(dir, name))
				if err != nil {
					return "", err
				}
				fmt.Fprintf(h, "n%d%s/%s %d\n", n.ID, dir, name, len(img))
				h.Write(img)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
