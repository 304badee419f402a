package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wire"
)

// Config configures a Transport.
type Config struct {
	// ID is this node; ClusterID the cluster's id (written at bootstrap
	// into the data directory); Peers every member's peer address, this
	// node's included or not.
	ID        raft.NodeID
	ClusterID uint64
	Peers     map[raft.NodeID]string
	// ClientAddr is this node's client address, told to every peer in the
	// handshake (for forwarding and redirects).
	ClientAddr string
	// Listener accepts the peers' connections (the caller makes it, and
	// wraps it in TLS: a *tls.Conn it accepts gets its TLS handshake
	// first, within HandshakeTimeout). Dial makes an outbound connection
	// (a TLS one's handshake done); default net.Dialer with DialTimeout.
	Listener net.Listener
	Dial     func(ctx context.Context, addr string) (net.Conn, error)
	// Authenticate, when set, checks that the other side of c is member
	// peer (with TLS: its certificate names that node of this cluster,
	// tlsauth.Store.CheckPeer). The dialer calls it before its hello, for
	// the peer it dialled; the acceptor after the hello, for the node the
	// hello claims, and refuses with the error's text.
	Authenticate func(c net.Conn, peer raft.NodeID) error
	// Deliver receives every inbound message that decoded (replica.Runner's
	// Deliver). It must not block.
	Deliver func(replica.Message)
	Logger  *slog.Logger
	// Clock, when set, is the sender's logical (Lamport) clock, carried
	// between the nodes' traces: every write of Messages frames is preceded
	// by a Clock frame stamped with Clock.Stamp() at that moment, and a
	// Clock frame received is given to Clock.Observe before the messages
	// after it are delivered. Without it a Clock frame received is read and
	// ignored.
	Clock Clock

	// QueueMessagesMax and QueueBytesMax bound each peer's send queue; a
	// message beyond either is dropped and counted. Defaults 4096 and 64 MiB.
	QueueMessagesMax int
	QueueBytesMax    int
	// FrameBytesMax bounds one frame's payload, both ways. Default 16 MiB.
	FrameBytesMax int
	Limits        Limits
	// BackoffMin and BackoffMax bound the jittered, doubling wait between
	// failed dials. Defaults 20ms and 1s.
	BackoffMin, BackoffMax time.Duration
	// DialTimeout, HandshakeTimeout and WriteTimeout bound a dial, the
	// handshake, and one write. Defaults 1s, 2s and 5s.
	DialTimeout, HandshakeTimeout, WriteTimeout time.Duration
}

// Clock is a logical clock the transport carries (Config.Clock).
type Clock interface {
	// Stamp is the clock now, for the messages about to leave.
	Stamp() uint64
	// Observe moves the clock to at least a clock a peer stamped.
	Observe(uint64)
}

func (c *Config) defaults() {
	setInt := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	setDur := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	setInt(&c.QueueMessagesMax, 4096)
	setInt(&c.QueueBytesMax, 64<<20)
	setInt(&c.FrameBytesMax, 16<<20)
	setDur(&c.BackoffMin, 20*time.Millisecond)
	setDur(&c.BackoffMax, time.Second)
	setDur(&c.DialTimeout, time.Second)
	setDur(&c.HandshakeTimeout, 2*time.Second)
	setDur(&c.WriteTimeout, 5*time.Second)
	if c.Limits == (Limits{}) {
		c.Limits = DefaultLimits
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Dial == nil {
		d := &net.Dialer{Timeout: c.DialTimeout}
		c.Dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
}

// Transport is the TCP peer transport: it implements replica.Transport
// (Send never blocks) and delivers inbound messages to Config.Deliver.
//
// One outbound connection per peer carries this node's messages to it; a
// writer goroutine per peer takes every message queued at once and writes
// them in one write, as frames of at most FrameBytesMax. A failed dial or
// write drops what was queued (the protocol retries) and redials after a
// jittered, doubling, capped backoff. Inbound connections are read-only:
// after the handshake the acceptor only reads frames of messages.
type Transport struct {
	cfg Config
	log *slog.Logger
	// peers are the nodes this one sends to (SetPeers changes them):
	// written under peersMu, read by Send, Peers and Close.
	peersMu sync.RWMutex
	peers   map[raft.NodeID]*peer
	// addrs is the address book: Config.Peers, then what SetAddress adds
	// (a member added later). Under peersMu; the handshake accepts its ids.
	addrs map[raft.NodeID]string
	// members are the ids SetPeers last named, with or without an address:
	// under peersMu; the handshake accepts them too, so that a leader this
	// node has no address for yet (its address entry not applied here) can
	// still reach it, and this node apply the entry that names the address.
	members              map[raft.NodeID]bool
	started, peersClosed bool // under peersMu
	stats                Stats

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	clientAddr map[raft.NodeID]string
	inbound    map[raft.NodeID]net.Conn
	conns      map[net.Conn]struct{} // every open connection, to close at Close
	closed     bool
}

// New returns a transport; Start starts it.
func New(cfg Config) (*Transport, error) {
	cfg.defaults()
	if cfg.ID == raft.None || cfg.Listener == nil || cfg.Deliver == nil {
		return nil, errors.New("transport: config needs ID, Listener and Deliver")
	}
	if _, ok := cfg.Peers[cfg.ID]; !ok {
		return nil, fmt.Errorf("transport: node %d is not among the peers %v", cfg.ID, cfg.Peers)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &Transport{cfg: cfg, log: cfg.Logger, peers: map[raft.NodeID]*peer{}, addrs: maps.Clone(cfg.Peers), ctx: ctx, cancel: cancel,
		clientAddr: map[raft.NodeID]string{}, inbound: map[raft.NodeID]net.Conn{}, conns: map[net.Conn]struct{}{}}
	for id, addr := range cfg.Peers {
		if id == cfg.ID {
			continue
		}
		t.peers[id] = newPeer(t, id, addr)
	}
	return t, nil
}

// Start starts the accept loop and one writer per peer.
func (t *Transport) Start() {
	t.wg.Add(1)
	go func() { defer t.wg.Done(); t.acceptLoop() }()
	t.peersMu.Lock()
	defer t.peersMu.Unlock()
	t.started = true
	for _, p := range t.peers {
		t.startPeer(p)
	}
}

func (t *Transport) startPeer(p *peer) {
	t.wg.Add(1)
	go func() { defer t.wg.Done(); p.run() }()
}

// SetPeers makes ids (this node left out) the peers the transport sends
// to, as the configuration in force changes (replica.Config.OnMembership):
// a writer starts for each new one, at its address in Config.Peers (an id
// without one is returned, and nothing is sent to it), and stops for each
// one no longer listed (its queue dropped, its connection closed; messages
// to it are dropped as to an unknown peer). Inbound connections are
// accepted from every node of the address book (Config.Peers and
// SetAddress) and from every id of ids, with or without an address: a
// member restarted before it applied a new leader's address entry must
// still let that leader in, or neither could ever reach the other. Safe
// from any goroutine.
func (t *Transport) SetPeers(ids []raft.NodeID) (noAddr []raft.NodeID) {
	t.peersMu.Lock()
	defer t.peersMu.Unlock()
	if t.peersClosed {
		return nil
	}
	want := map[raft.NodeID]bool{}
	for _, id := range ids {
		if id == t.cfg.ID || id == raft.None {
			continue
		}
		want[id] = true
		if t.peers[id] != nil {
			continue
		}
		addr, ok := t.addrs[id]
		if !ok {
			noAddr = append(noAddr, id)
			continue
		}
		p := newPeer(t, id, addr)
		t.peers[id] = p
		t.log.Info("transport: peer added", "peer", uint64(id), "addr", addr)
		if t.started {
			t.startPeer(p)
		}
	}
	t.members = want
	for id, p := range t.peers {
		if !want[id] {
			delete(t.peers, id)
			p.cancel()
			p.wake()
			p.dropQueued()
			t.log.Info("transport: peer removed", "peer", uint64(id))
		}
	}
	return noAddr
}

// SetAddress adds id's peer address to the address book (a member added
// after Config.Peers was made, whose address travelled with its change):
// from now on the handshake accepts id, and SetPeers can start a writer
// for it. An id already in the book keeps its address (ids are never
// reused); it reports whether addr was taken. Safe from any goroutine.
func (t *Transport) SetAddress(id raft.NodeID, addr string) bool {
	t.peersMu.Lock()
	defer t.peersMu.Unlock()
	if id == raft.None || addr == "" {
		return false
	}
	if _, ok := t.addrs[id]; ok {
		return false
	}
	t.addrs[id] = addr
	t.log.Info("transport: peer address learned", "peer", uint64(id), "addr", addr)
	return true
}

// known reports whether the handshake accepts id: it is in the address
// book or among the peers SetPeers last named.
func (t *Transport) known(id raft.NodeID) bool {
	t.peersMu.RLock()
	defer t.peersMu.RUnlock()
	_, ok := t.addrs[id]
	return ok || t.members[id]
}

// Close stops the transport: the listener and every connection are
// closed, and every goroutine has ended when it returns.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	conns := make([]net.Conn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	t.peersMu.Lock()
	t.peersClosed = true
	t.peersMu.Unlock()
	t.cancel()
	err := t.cfg.Listener.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	t.peersMu.RLock()
	for _, p := range t.peers {
		p.wake()
	}
	t.peersMu.RUnlock()
	t.wg.Wait()
	return err
}

// track registers an open connection (false once the transport closed).
func (t *Transport) track(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

func (t *Transport) untrack(c net.Conn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	_ = c.Close()
}

// Send queues every message for its peer and returns at once; a message
// for an unknown peer or beyond a full queue is dropped and counted.
func (t *Transport) Send(ms []replica.Message) {
	t.peersMu.RLock()
	defer t.peersMu.RUnlock()
	for k := range ms {
		p := t.peers[ms[k].To]
		if p == nil {
			t.stats.DroppedUnknownPeer.Add(1)
			continue
		}
		p.enqueue(ms[k])
	}
}

// ClientAddr returns the client address peer id told in its last
// handshake ("" when none yet).
func (t *Transport) ClientAddr(id raft.NodeID) string {
	if id == t.cfg.ID {
		return t.cfg.ClientAddr
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.clientAddr[id]
}

func (t *Transport) learnClientAddr(id raft.NodeID, addr string) {
	t.mu.Lock()
	t.clientAddr[id] = addr
	t.mu.Unlock()
}

// Stats returns the transport's counters.
func (t *Transport) Stats() *Stats { return &t.stats }

// PeerStatus is one peer as the transport sees it.
type PeerStatus struct {
	ID         raft.NodeID `json:"id"`
	PeerAddr   string      `json:"peer_addr"`
	ClientAddr string      `json:"client_addr"`
	// Connected: the outbound connection is up (handshake done).
	Connected bool `json:"connected"`
	// Inbound: the peer's connection to this node is up.
	Inbound bool   `json:"inbound"`
	Queued  int    `json:"queued"`
	Dropped uint64 `json:"dropped"`
	// LastError is the last dial, handshake or write failure.
	LastError string `json:"last_error,omitempty"`
}

// Peers returns the status of every peer, by id.
func (t *Transport) Peers() []PeerStatus {
	t.peersMu.RLock()
	defer t.peersMu.RUnlock()
	out := make([]PeerStatus, 0, len(t.peers))
	for id, p := range t.peers {
		st := p.status()
		st.ClientAddr = t.ClientAddr(id)
		t.mu.Lock()
		st.Inbound = t.inbound[id] != nil
		t.mu.Unlock()
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b PeerStatus) int { return int(a.ID) - int(b.ID) })
	return out
}

// Addr is the peer listener's address.
func (t *Transport) Addr() net.Addr { return t.cfg.Listener.Addr() }

// errClosed ends a goroutine at Close.
var errClosed = errors.New("transport: closed")

// writeFrames writes b to c within the write timeout.
func (t *Transport) writeFrames(c net.Conn, b []byte) error {
	if err := c.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout)); err != nil {
		return err
	}
	_, err := c.Write(b)
	if err == nil {
		t.stats.BytesSent.Add(uint64(len(b)))
	}
	return err
}

// readerFor returns a frame reader with the transport's size limit.
func (t *Transport) readerFor(c net.Conn) *wire.Reader { return wire.NewReader(c, t.cfg.FrameBytesMax) }
