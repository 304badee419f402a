package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/tlsauth"
	"github.com/durableraft/durableraft/impl/transport"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
	"github.com/durableraft/durableraft/impl/wire"
)

// Config configures a node.
type Config struct {
	ID      raft.NodeID
	DataDir string
	// ClientAddr and PeerAddr are the addresses to listen on (":0" picks a
	// port); AdvertiseClient is the client address told to peers (default:
	// the client listener's address).
	ClientAddr, PeerAddr, AdvertiseClient string
	// InitialPeers is the cluster at the first boot (--peers); later boots
	// use the data directory's cluster file. ClusterToken enters the
	// cluster id.
	InitialPeers map[raft.NodeID]string
	ClusterToken string
	// Join, at the first boot, makes this node one that joins a running
	// cluster (raftd --join): InitialPeers are then the members' current
	// peer addresses (this node's included), and the node campaigns and
	// votes only once the log makes it a voter (raft.Config.Joining). An
	// admin adds it first (POST /v1/members, op add, which answers with
	// the Join values). Later boots read the cluster file.
	Join *Join
	// WALSyncDelay is wal.Options.SyncDelay (--wal-sync-ms): the bound on
	// the group-commit delay, never a durability gap.
	WALSyncDelay time.Duration
	// WALSegmentBytes is wal.Options.SegmentBytes (--wal-segment-bytes):
	// compaction frees whole segments, so it is also the granularity of
	// compaction (0: the WAL's default, 64 MiB; at least
	// WALSegmentBytesMin, a multiple of 4096).
	WALSegmentBytes int64
	// Snapshot is the compaction policy (--snapshot-*): snapshots of the
	// KV store are files under DataDir/snap, on FS beside the WAL.
	Snapshot SnapshotConfig
	// TraceDir, when set, receives the core's trace (raft.Config.Trace):
	// one ndjson file per boot.
	TraceDir string
	// TickInterval is one protocol tick (default 20ms); the election
	// timeout is 10 ticks, randomized up to 20.
	TickInterval time.Duration
	// RequestTimeout bounds a client request (default 5s): past it, a
	// proposal's outcome is unknown.
	RequestTimeout time.Duration
	// IdleNoop: a leader that proposed nothing for this long proposes a kv
	// no-op stamped with its clock, so that sessions expire (default 1s).
	IdleNoop time.Duration
	Logger   *slog.Logger
	// Listen makes the listeners: the one place a listener is set up (with
	// TLS, Open wraps what it returns). Default net.Listen("tcp", addr).
	Listen func(addr string) (net.Listener, error)
	// TLS, when set, is mutual TLS 1.3 on both ports from its credentials
	// (impl/tlsauth, reloaded on change): the peer port takes only a
	// member's certificate naming the node its hello claims; the client
	// port serves this node's certificate and judges every request by the
	// client certificate's role (auth.go). Its certificate must name this
	// node of this cluster. Without TLS, both addresses must be loopback
	// unless Insecure.
	TLS      *tlsauth.Store
	Insecure bool
	// FS is the file system under the WAL: default vfs.OS; tests set
	// impl/lossyfs (TestingLossyFS says so in the status).
	FS             vfs.FS
	TestingLossyFS bool
	// TestingFailSyncFile: the lossy file system fails every fdatasync
	// with EIO while this file exists (shown in the status; tests only).
	TestingFailSyncFile string
	// TestingCoreBugs and TestingReplicaBugs re-introduce the failures
	// their rules prevent. Tests only.
	TestingCoreBugs    raft.Bug
	TestingReplicaBugs replica.Bug
	// StateCheckEvery: the KV state hash is recorded at every multiple of
	// this index and compared across members (statecheck.go; default
	// 1000); StateCheckInterval is how often a member checks (default 1s).
	StateCheckEvery    uint64
	StateCheckInterval time.Duration
	// ForceNewCluster (raftd --force-new-cluster): make this node the only
	// voter, every other member removed (firstboot.go's forceStatement);
	// refused unless ForceNewClusterConfirm is "CLUSTER_ID/NODE_ID".
	ForceNewCluster        bool
	ForceNewClusterConfirm string
	// TestingDivergeAt plants a divergent member: from this index on its
	// recorded state hashes differ (tests only).
	TestingDivergeAt uint64
	// TestingNoPreVote turns pre-vote off (--testing-bugs no-pre-vote): a
	// node cut off from the leader then raises its term and disrupts the
	// leader when it returns (conformance/proc's partition test shows it).
	TestingNoPreVote bool
}

// WALSegmentBytesMin is the smallest WALSegmentBytes: a segment holds four
// of the largest entries (the WAL's entry bound is a quarter of a segment,
// at most 1 MiB, and a KV command may take kv.CommandBytesMax).
const WALSegmentBytesMin = 4 << 20

// SnapshotConfig is the snapshot and compaction policy. A node always
// takes a snapshot a leader sends it; it makes its own, and compacts its
// log below them, once Entries entries or Bytes bytes of entry data were
// applied since its last one (both 0: never, the log grows for ever).
// KeepEntries stay below a snapshot (0: Entries/4), so that a follower a
// little behind catches up from the log; ChunkBytes is the transfer chunk
// and the file's block (0: 64 KiB).
type SnapshotConfig struct {
	Entries, Bytes, KeepEntries uint64
	ChunkBytes                  int
}

func (c *Config) defaults() {
	if c.TickInterval <= 0 {
		c.TickInterval = 20 * time.Millisecond
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 5 * time.Second
	}
	if c.IdleNoop <= 0 {
		c.IdleNoop = time.Second
	}
	if c.StateCheckEvery == 0 {
		c.StateCheckEvery = 1000
	}
	if c.StateCheckInterval <= 0 {
		c.StateCheckInterval = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Listen == nil {
		c.Listen = func(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
	}
	if c.FS == nil {
		c.FS = vfs.OS{}
	}
}

// Node is one raftd: the replica runtime (replica.Runner, the only loop
// that drives the core) over the WAL, the KV store as its state machine,
// the peer transport, and the client API (HTTP and the pipelined protocol
// on one port).
type Node struct {
	cfg       Config
	log       *slog.Logger
	cluster   Cluster
	firstBoot bool
	// fbRec: the first-boot record at boot (firstboot.go);
	// firstBootState: its raft.FirstBootState now.
	fbRec          *raft.FirstBoot
	firstBootState atomic.Uint32
	rec            *wal.Recovery
	w              *wal.WAL
	sm             *machine
	rep            *replica.Replica
	run            *replica.Runner
	tr             *transport.Transport
	trace          *traceSink

	peerL, clientL net.Listener
	httpL          *chanListener
	httpSrv        *http.Server
	fwd            *http.Client
	pipes          *pipeServer
	clientAddr     string

	ctx       context.Context // ends when the node stops serving
	cancel    context.CancelFunc
	runCancel context.CancelFunc
	runDone   chan struct{}
	wg        sync.WaitGroup
	stopping  atomic.Bool
	stopOnce  sync.Once
	stopErr   error

	// membership is the configuration in force as the replica last
	// reported it (membershipChanged); book the peer addresses of members
	// added after bootstrap, from the replicated address book (members.go).
	membership atomic.Pointer[raft.Membership]
	bookMu     sync.Mutex
	book       map[raft.NodeID]string
	// logBook is the peer address puts of the local log at boot
	// (logBookScan), read-only after Open: used only for members of the
	// configuration in force whose put is not applied yet.
	logBook map[raft.NodeID]string

	lastProposeMs atomic.Int64
	stats         Stats
	metrics       *metrics
	check         *stateCheck
}

// Stats are the node's client-side counters.
type Stats struct {
	Requests, Writes, Reads, StaleReads, Forwarded, Redirected, BadRequests atomic.Uint64
	Definite, Unknown, IdleNoops, PipeConns, PipeBadFrames                  atomic.Uint64
	// TLSHandshakesFailed: client connections whose TLS handshake failed;
	// AuthRefused: requests refused for their certificate or role.
	TLSHandshakesFailed, AuthRefused atomic.Uint64
}

// Open boots a node: the cluster file (written at the first boot), the
// listeners, the WAL's recovery, the replica. Start runs it.
func Open(cfg Config) (*Node, error) {
	cfg.defaults()
	if cfg.ID == raft.None || cfg.DataDir == "" {
		return nil, errors.New("server: config needs ID and DataDir")
	}
	if err := checkBinds(&cfg); err != nil {
		return nil, err
	}
	if s := cfg.WALSegmentBytes; s != 0 && (s < WALSegmentBytesMin || s%4096 != 0) {
		return nil, fmt.Errorf("server: WAL segments of %d bytes: at least %d, a multiple of 4096", s, WALSegmentBytesMin)
	}
	log := cfg.Logger.With("node", uint64(cfg.ID))
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	if err := prepareFirstBoot(cfg.DataDir, cfg.Join); err != nil {
		return nil, err
	}
	cl, first, err := loadOrCreateCluster(cfg.DataDir, cfg.ID, cfg.InitialPeers, cfg.ClusterToken, cfg.Join)
	if err != nil {
		return nil, err
	}
	fb, err := loadFirstBoot(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	logFirstBoot(log, fb)
	if !first && cfg.InitialPeers != nil && FormatPeers(cfg.InitialPeers) != FormatPeers(cl.Members) {
		log.Warn("server: --peers ignored: the data directory names the cluster", "peers_flag", FormatPeers(cfg.InitialPeers),
			"members", FormatPeers(cl.Members))
	}
	if cfg.TLS != nil {
		if err := checkIdentity(cfg.TLS, cfg.ID, cl.ID); err != nil {
			return nil, err
		}
	} else if cfg.Insecure {
		log.Warn("server: --insecure: listening without TLS", "client", cfg.ClientAddr, "peer", cfg.PeerAddr)
	}
	n := &Node{cfg: cfg, log: log, cluster: cl, firstBoot: first, fbRec: fb, runDone: make(chan struct{}), metrics: newMetrics(),
		check: newStateCheck(), book: map[raft.NodeID]string{}}
	n.firstBootState.Store(uint32(fb.State))
	n.metrics.reg.MustRegister(stateCollector{n})
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.open(); err != nil {
		n.closeListeners()
		return nil, err
	}
	return n, nil
}

func (n *Node) open() error {
	cfg := n.cfg
	var err error
	if n.peerL, err = n.listen(cfg.PeerAddr, tlsauth.RequireCert); err != nil {
		return fmt.Errorf("peer listener: %w", err)
	}
	if n.clientL, err = n.listen(cfg.ClientAddr, tlsauth.VerifyCertIfGiven); err != nil {
		return fmt.Errorf("client listener: %w", err)
	}
	n.clientAddr = cfg.AdvertiseClient
	if n.clientAddr == "" {
		n.clientAddr = n.clientL.Addr().String()
	}
	if cfg.TestingLossyFS || cfg.TestingCoreBugs != 0 || cfg.TestingReplicaBugs != 0 || cfg.TestingNoPreVote || cfg.TestingDivergeAt != 0 {
		n.log.Warn("server: TESTING MODE: not for real data", "lossy_fs", cfg.TestingLossyFS, "fail_sync_file", cfg.TestingFailSyncFile,
			"core_bugs", cfg.TestingCoreBugs.String(), "replica_bugs", cfg.TestingReplicaBugs.String(), "no_pre_vote", cfg.TestingNoPreVote, "diverge_at", cfg.TestingDivergeAt)
	}
	w, rec, err := wal.Open(timedFS{FS: cfg.FS, m: n.metrics}, filepath.Join(cfg.DataDir, "wal"), wal.Options{SyncDelay: cfg.WALSyncDelay, SegmentBytes: cfg.WALSegmentBytes,
		Logger: n.log, ObserveFlush: func(records int) { n.metrics.flushes.Observe(float64(records)) }})
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	n.rec, n.w = rec, w
	n.logRecovery(rec)
	if err := n.checkForceNewCluster(rec); err != nil {
		w.Close()
		return err
	}
	if n.logBook, err = logBookScan(w); err != nil {
		w.Close()
		return err
	}
	voters := n.cluster.voters()
	if cfg.TraceDir != "" {
		if n.trace, err = openTrace(cfg.TraceDir, cfg.ID, voters, cfg.TestingCoreBugs); err != nil {
			w.Close()
			return err
		}
	}
	tc := transport.Config{ID: cfg.ID, ClusterID: n.cluster.ID, Peers: n.cluster.Members, ClientAddr: n.clientAddr,
		Listener: n.peerL, Deliver: func(m replica.Message) { n.run.Deliver(m) }, Logger: n.log}
	if n.trace != nil {
		tc.Clock = n.trace // the trace's logical clock travels with the messages
	}
	if cfg.TLS != nil {
		tc.Dial = cfg.TLS.Dialer(time.Second, nil)
		tc.Authenticate = func(c net.Conn, peer raft.NodeID) error { return cfg.TLS.CheckPeer(c, uint64(peer)) }
	}
	n.tr, err = transport.New(tc)
	if err != nil {
		w.Close()
		return err
	}
	rc := raft.Config{ID: cfg.ID, Voters: voters, ElectionTick: 10, HeartbeatTick: 1,
		Rand: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(cfg.ID))), PreVote: !cfg.TestingNoPreVote, CheckQuorum: true,
		TestingBugs: cfg.TestingCoreBugs, Joining: n.cluster.Joining(cfg.ID)}
	if n.trace != nil {
		rc.Trace = n.trace
	}
	n.sm = newMachine(kv.Options{})
	so := &replica.SnapshotOptions{FS: cfg.FS, Dir: filepath.Join(cfg.DataDir, "snap"), Entries: cfg.Snapshot.Entries,
		Bytes: cfg.Snapshot.Bytes, KeepEntries: cfg.Snapshot.KeepEntries, ChunkBytes: cfg.Snapshot.ChunkBytes}
	n.sm.checkEvery, n.sm.divergeAt = cfg.StateCheckEvery, cfg.TestingDivergeAt
	n.sm.onPeerAddr = n.peerAddrLearned
	n.rep, err = replica.New(replica.Config{Raft: rc, WAL: w, Recovery: rec, StateMachine: n.sm, Transport: n.tr,
		Logger: cfg.Logger, TestingBugs: cfg.TestingReplicaBugs, Snapshots: so,
		Now: time.Now, ObserveStage: n.metrics.observeStage, OnMembership: n.membershipChanged,
		FirstBoot: n.fbRec, OnFirstBoot: n.firstBootChanged, ForceNewCluster: cfg.ForceNewCluster})
	if err != nil {
		w.Close()
		return err
	}
	n.run = replica.NewRunner(n.rep, replica.RunOptions{TickInterval: cfg.TickInterval})
	n.httpL = newChanListener(n.clientL.Addr())
	n.httpSrv = &http.Server{Handler: n.routes(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(n.log.Handler(), slog.LevelWarn),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if pc, ok := c.(*peekedConn); ok {
				return context.WithValue(ctx, authContext{}, pc.p)
			}
			return ctx
		}}
	n.fwd = &http.Client{Timeout: cfg.RequestTimeout, Transport: n.forwardTransport()}
	n.pipes = newPipeServer(n)
	return nil
}

func (n *Node) logRecovery(rec *wal.Recovery) {
	args := []any{"verdict", rec.Verdict.String(), "case", rec.Case, "reason", rec.Reason, "first_index", rec.IndexFirst,
		"last_index", rec.IndexLast, "hard_state_verdict", rec.HardStateVerdict.String(), "term", rec.HardState.Term,
		"learned_commit", rec.HardState.Commit, "first_boot", n.firstBoot, "cluster_id", n.cluster.IDHex,
		"stop_segment", rec.StopSegment, "stop_offset", rec.StopOffset}
	if rec.Verdict == wal.Truncated {
		// The truncation boundary: everything after truncated_after is gone
		// from this node's log (the scan stopped at stop_segment:stop_offset,
		// evidence of durable data behind it at evidence_offset).
		args = append(args, "truncated_after", rec.IndexLast, "evidence_offset", rec.EvidenceOffset, "quarantined", rec.Quarantined)
	}
	if rec.Verdict == wal.Truncated || rec.HardStateVerdict == wal.Truncated {
		n.log.Error("server: recovery says TRUNCATED: starting FENCED (no campaign, no vote while truncated); catching up from the leader, never exiting", args...)
		return
	}
	n.log.Info("server: recovered", args...)
}

// Start runs the node: the replica's runner, the transport, the client
// listener, and the leader's idle no-op.
func (n *Node) Start() {
	runCtx, cancel := context.WithCancel(context.Background())
	n.runCancel = cancel
	go func() { defer close(n.runDone); n.run.Run(runCtx) }()
	n.tr.Start()
	n.wg.Add(4)
	go func() { defer n.wg.Done(); n.acceptClients() }()
	go func() { defer n.wg.Done(); n.stateChecks() }()
	go func() {
		defer n.wg.Done()
		if err := n.httpSrv.Serve(n.httpL); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("server: http", "err", err)
		}
	}()
	go func() { defer n.wg.Done(); n.idleNoops() }()
	m := n.inForce()
	n.log.Info("server: serving", "client", n.clientAddr, "peer", n.peerL.Addr().String(), "members", FormatPeers(n.cluster.Members),
		"voters", fmt.Sprint(m.Voters), "learners", fmt.Sprint(m.Learners), "joining", n.cluster.Joining(n.cfg.ID))
}

// ClientAddr is the address clients reach this node at; PeerAddr the
// peer listener's.
func (n *Node) ClientAddr() string { return n.clientAddr }
func (n *Node) PeerAddr() string   { return n.peerL.Addr().String() }

// Cluster returns the cluster file's content.
func (n *Node) Cluster() Cluster { return n.cluster }

// Stopped is closed once the replica's runner has stopped.
func (n *Node) Stopped() <-chan struct{} { return n.runDone }

// Shutdown stops the node cleanly: a leader first hands its leadership to
// the most up-to-date follower (bounded by ctx), then the client API stops
// (requests in flight get their answers or time out), then the runner, the
// transport, and the replica, which closes the WAL.
func (n *Node) Shutdown(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.shutdown(ctx) })
	return n.stopErr
}

func (n *Node) shutdown(ctx context.Context) error {
	n.transferOnShutdown(ctx)
	n.stopping.Store(true)
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_ = n.httpSrv.Shutdown(hctx)
	cancel()
	n.pipes.close()
	n.cancel()
	n.closeListeners()
	n.runCancel()
	<-n.runDone
	err := n.tr.Close()
	n.wg.Wait()
	n.pipes.wait()
	if e := n.rep.Close(); e != nil {
		err = e
	}
	if n.trace != nil {
		if e := n.trace.Close(); e != nil && err == nil {
			err = e
		}
	}
	n.log.Info("server: stopped")
	return err
}

func (n *Node) closeListeners() {
	if n.clientL != nil {
		_ = n.clientL.Close()
	}
	if n.httpL != nil {
		_ = n.httpL.Close()
	}
	if n.peerL != nil && n.tr == nil {
		_ = n.peerL.Close()
	}
}

// transferOnShutdown: a leader hands its leadership to the connected
// follower with the highest match index and waits (bounded) until it is no longer the
// leader, so that the cluster does not wait out an election timeout.
func (n *Node) transferOnShutdown(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	st, err := n.run.Status(ctx)
	if err != nil || st.Role != raft.RoleLeader {
		return
	}
	up := map[raft.NodeID]bool{}
	for _, p := range n.tr.Peers() {
		up[p.ID] = p.Connected && p.Inbound
	}
	var to raft.NodeID
	var best uint64
	for id, pr := range st.Progress {
		if up[id] && (to == raft.None || pr.Match > best) {
			to, best = id, pr.Match
		}
	}
	if to == raft.None {
		return
	}
	n.log.Info("server: stopping: transferring leadership first", "to", uint64(to), "match", best, "last", st.Last)
	if err := n.transfer(ctx, to); err != nil {
		n.log.Warn("server: leadership transfer before stopping did not complete", "to", uint64(to), "err", err)
		return
	}
	n.log.Info("server: leadership transferred", "to", uint64(to))
}

// transfer asks the replica to hand leadership to to and waits until this
// node no longer leads (a poll of the runner's status, bounded by ctx).
func (n *Node) transfer(ctx context.Context, to raft.NodeID) error {
	if err := n.run.Submit(replica.Event{Kind: replica.EventTransfer, To: to}); err != nil {
		return err
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := n.run.Status(ctx)
		if err != nil {
			return err
		}
		if done, err := transferOutcome(st.Role, st.Lead, to); done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// transferOutcome says whether a transfer to to has ended, as a status of
// the old leader shows it: still leading, or stepped down with the new
// leader not heard from yet, it has not; another leader is a failure.
func transferOutcome(role raft.Role, lead, to raft.NodeID) (bool, error) {
	switch {
	case role == raft.RoleLeader, lead == raft.None:
		return false, nil
	case lead == to:
		return true, nil
	}
	return true, fmt.Errorf("stepped down; leader now %d", lead)
}

// idleNoops: while this node leads and nothing was proposed for
// IdleNoop, propose a kv no-op stamped with the leader's clock, so that
// sessions expire on time even when nobody writes.
func (n *Node) idleNoops() {
	tick := time.NewTicker(n.cfg.IdleNoop / 2)
	defer tick.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now().UnixMilli()
		if now-n.lastProposeMs.Load() < n.cfg.IdleNoop.Milliseconds() {
			continue
		}
		ctx, cancel := context.WithTimeout(n.ctx, time.Second)
		st, err := n.run.Status(ctx)
		cancel()
		if err != nil || st.Role != raft.RoleLeader {
			continue
		}
		data, err := kv.Noop().At(uint64(now)).Marshal()
		if err != nil {
			panic(err) // a no-op always encodes
		}
		if n.run.Submit(replica.Event{Kind: replica.EventPropose, Proposals: []replica.Proposal{{Data: data, Done: func(replica.Result) {}}}}) == nil {
			n.lastProposeMs.Store(now)
			n.stats.IdleNoops.Add(1)
		}
	}
}

// acceptClients takes connections on the client port and tells the two
// protocols apart by the first byte: a frame starts with wire.Version (1),
// an HTTP request with a letter.
func (n *Node) acceptClients() {
	for {
		c, err := n.clientL.Accept()
		if err != nil {
			if n.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			n.log.Warn("server: accept", "err", err)
			continue
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			p, err := n.identify(c)
			if err != nil {
				_ = c.Close()
				return
			}
			br := bufio.NewReaderSize(c, 64<<10)
			b, err := br.Peek(1)
			_ = c.SetReadDeadline(time.Time{})
			if err != nil {
				_ = c.Close()
				return
			}
			if b[0] == wire.Version {
				n.pipes.serve(c, br, p)
				return
			}
			if !n.httpL.push(&peekedConn{Conn: c, r: br, p: p}) {
				_ = c.Close()
			}
		}()
	}
}

// peekedConn is a connection whose first bytes wait in r, and who is on
// its other side.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
	p principal
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// chanListener hands the HTTP server the connections acceptClients
// routes to it.
type chanListener struct {
	addr   net.Addr
	ch     chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// membershipChanged follows the configuration in force (replica.Config.
// OnMembership, on the replica's goroutine or in its boot): the transport
// sends to its members only, connecting to a new one at its address in the
// address book and no longer sending to a removed one.
func (n *Node) membershipChanged(m raft.Membership) {
	m.Voters, m.Learners, m.Removed = slices.Clone(m.Voters), slices.Clone(m.Learners), slices.Clone(m.Removed)
	n.membership.Store(&m)
	noAddr := n.tr.SetPeers(n.peerSet(m))
	var fromLog []raft.NodeID
	for _, id := range noAddr {
		if addr, ok := n.logBook[id]; ok {
			n.peerAddrLearned(id, addr)
			fromLog = append(fromLog, id)
		}
	}
	if len(fromLog) > 0 {
		n.log.Info("server: peer addresses taken from the local log before their puts are applied", "ids", fmt.Sprint(fromLog))
		noAddr = n.tr.SetPeers(n.peerSet(m))
	}
	if len(noAddr) > 0 {
		// A member whose address entry this node has not applied yet (it
		// precedes the configuration entry, which is in force from its
		// append): the writer starts when it applies.
		n.log.Warn("server: members without a peer address yet (their address entry not applied here yet): nothing is sent to them until it is",
			"ids", fmt.Sprint(noAddr))
	}
}
