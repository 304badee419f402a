package procs

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config configures a cluster of processes.
type Config struct {
	// Raftd is the raftd binary; Dir holds each node's data (Dir/<id>) and
	// log (Dir/<id>.log).
	Raftd string
	Dir   string
	Size  int
	// ClientPorts and PeerPorts fix the ports (node k gets the k-th); empty
	// picks free ports on 127.0.0.1.
	ClientPorts, PeerPorts []int
	// Args returns extra flags for node id (test switches, --wal-sync-ms).
	Args func(id int) []string
	// Stderr, when set, also receives every node's log.
	Stderr io.Writer
	// ClientTLS, when set, is the TLS configuration of the cluster's own
	// HTTP requests (Status, Leader, Transfer: an admin's certificate,
	// since a transfer needs admin); the nodes get their TLS flags from
	// Args.
	ClientTLS *tls.Config
	// PeerProxy routes every node's peer traffic through a Proxy in this
	// process (Cluster.Proxy): --peers names the proxy's addresses, each
	// node listens on another port behind it. Not with TLS.
	PeerProxy bool
}

// Node is one raftd process.
type Node struct {
	ID                   int
	ClientAddr, PeerAddr string
	// ListenPeer is where the node listens for peers: PeerAddr, or behind
	// the proxy another port.
	ListenPeer       string
	DataDir, LogPath string
	// Peers, when set, is this node's --peers instead of the cluster's
	// (a node that joins: the members' addresses then, its own included);
	// Extra are more flags for it (raftd --join's). Set before Start.
	Peers string
	Extra []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Cluster is a set of raftd processes.
type Cluster struct {
	cfg   Config
	Nodes []*Node
	// Proxy carries the peer traffic (Config.PeerProxy); nil otherwise.
	Proxy  *Proxy
	http   *http.Client
	scheme string
}

// New allocates the addresses and data directories; Start starts nodes.
func New(cfg Config) (*Cluster, error) {
	c := &Cluster{cfg: cfg, scheme: "http",
		http: &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: cfg.ClientTLS}}}
	if cfg.ClientTLS != nil {
		c.scheme = "https"
	}
	for k := 0; k < cfg.Size; k++ {
		cp, pp, err := ports(cfg, k)
		if err != nil {
			return nil, err
		}
		if err := c.newNode(cp, pp); err != nil {
			return nil, err
		}
	}
	if cfg.PeerProxy {
		p, err := newProxy(c.Nodes)
		if err != nil {
			return nil, err
		}
		c.Proxy = p
	}
	return c, os.MkdirAll(cfg.Dir, 0o755)
}

func (c *Cluster) newNode(cp, pp int) error {
	id := len(c.Nodes) + 1
	n := &Node{ID: id, ClientAddr: fmt.Sprintf("127.0.0.1:%d", cp), PeerAddr: fmt.Sprintf("127.0.0.1:%d", pp),
		DataDir: filepath.Join(c.cfg.Dir, fmt.Sprint(id)), LogPath: filepath.Join(c.cfg.Dir, fmt.Sprintf("%d.log", id))}
	n.ListenPeer = n.PeerAddr
	if c.cfg.PeerProxy {
		lp, err := FreePort()
		if err != nil {
			return err
		}
		n.ListenPeer = fmt.Sprintf("127.0.0.1:%d", lp)
	}
	c.Nodes = append(c.Nodes, n)
	return nil
}

// AddNode allocates one more node (the next id, free ports, a data
// directory) for a membership change: not started, not in Peers. Not with
// PeerProxy. Call it from the goroutine that drives the cluster.
func (c *Cluster) AddNode() (*Node, error) {
	if c.cfg.PeerProxy {
		return nil, errors.New("procs: AddNode with a peer proxy")
	}
	cp, pp, err := ports(Config{}, 0)
	if err != nil {
		return nil, err
	}
	if err := c.newNode(cp, pp); err != nil {
		return nil, err
	}
	return c.Nodes[len(c.Nodes)-1], nil
}

func ports(cfg Config, k int) (int, int, error) {
	if k < len(cfg.ClientPorts) && k < len(cfg.PeerPorts) {
		return cfg.ClientPorts[k], cfg.PeerPorts[k], nil
	}
	cp, err := FreePort()
	if err != nil {
		return 0, 0, err
	}
	pp, err := FreePort()
	return cp, pp, err
}

// handedOut is every port FreePort has returned in this process: the OS
// may give a port that was just closed again (a clean-clone CI run saw a
// node's client and peer ports equal, and the node refuse to start), so a
// port is never returned twice.
var (
	handedOutMu sync.Mutex
	handedOut   = map[int]bool{}
)

// FreePort returns a port of 127.0.0.1 that was free a moment ago and that
// no earlier call returned (in this process).
func FreePort() (int, error) {
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	for range 1000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut[port] {
			handedOut[port] = true
			return port, nil
		}
	}
	return 0, errors.New("procs: no port that was not handed out already in 1,000 tries")
}

// Peers is the --peers value of the initial cluster (the nodes New made).
func (c *Cluster) Peers() string {
	parts := make([]string, c.cfg.Size)
	for k, n := range c.Nodes[:c.cfg.Size] {
		parts[k] = fmt.Sprintf("%d=%s", n.ID, n.PeerAddr)
	}
	return strings.Join(parts, ",")
}

// Endpoints are the client addresses.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.Nodes))
	for k, n := range c.Nodes {
		out[k] = n.ClientAddr
	}
	return out
}

// Node returns node id.
func (c *Cluster) Node(id int) *Node { return c.Nodes[id-1] }

// Start starts node id (its log appended to its log file).
func (c *Cluster) Start(id int) error {
	n := c.Node(id)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("node %d is running", id)
	}
	peers := c.Peers()
	if n.Peers != "" {
		peers = n.Peers
	}
	args := []string{"--id", fmt.Sprint(id), "--data", n.DataDir, "--listen-client", n.ClientAddr, "--listen-peer", n.ListenPeer, "--peers", peers}
	args = append(args, n.Extra...)
	if c.cfg.Args != nil {
		args = append(args, c.cfg.Args(id)...)
	}
	logf, err := os.OpenFile(n.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.cfg.Raftd, args...)
	var w io.Writer = logf
	if c.cfg.Stderr != nil {
		w = io.MultiWriter(logf, c.cfg.Stderr)
	}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	n.cmd, n.exited = cmd, make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		err := cmd.Wait()
		logf.Close()
		n.mu.Lock()
		n.err = err
		n.mu.Unlock()
		close(done)
	}(cmd, n.exited)
	return nil
}

// StartAll starts every node.
func (c *Cluster) StartAll() error {
	for _, n := range c.Nodes {
		if err := c.Start(n.ID); err != nil {
			return err
		}
	}
	return nil
}

// Running reports whether node id's process is running.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// Pid is the process id (0 when not running).
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

func (c *Cluster) signal(id int, sig syscall.Signal) (chan struct{}, error) {
	n := c.Node(id)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil, fmt.Errorf("node %d is not running", id)
	}
	err := n.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		err = nil // it exited on its own: wait collects it
	}
	return n.exited, err
}

// wait waits (bounded) for node id to exit and forgets its process.
func (c *Cluster) wait(id int, exited chan struct{}, limit time.Duration) error {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		return fmt.Errorf("node %d did not exit within %v", id, limit)
	}
	n := c.Node(id)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cmd = nil
	return n.err
}

// Kill sends SIGKILL (kill -9: on the lossy test file system every
// unsynced write is lost) and waits for the process to end.
func (c *Cluster) Kill(id int) error {
	exited, err := c.signal(id, syscall.SIGKILL)
	if err != nil {
		return err
	}
	_ = syscall.Kill(c.Node(id).Pid(), syscall.SIGCONT) // a paused process dies too
	if err := c.wait(id, exited, 10*time.Second); err != nil && !isSignalled(err) {
		return err
	}
	return nil
}

func isSignalled(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// Stop sends SIGTERM (a leader transfers its leadership, then the node
// stops cleanly) and waits for the exit, which must be clean.
func (c *Cluster) Stop(id int) error {
	_ = syscall.Kill(c.Node(id).Pid(), syscall.SIGCONT)
	exited, err := c.signal(id, syscall.SIGTERM)
	if err != nil {
		return err
	}
	return c.wait(id, exited, 20*time.Second)
}

// StopAll stops every running node.
func (c *Cluster) StopAll() error {
	var first error
	for _, n := range c.Nodes {
		if n.Running() {
			if err := c.Stop(n.ID); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// KillAll kills every running node.
func (c *Cluster) KillAll() {
	var ids []int
	for _, n := range c.Nodes {
		if n.Running() {
			ids = append(ids, n.ID)
		}
	}
	_ = c.KillMany(ids...)
}

// KillMany sends SIGKILL to every node of ids at once (no node gets the
// time to sync while another dies), then waits for each.
func (c *Cluster) KillMany(ids ...int) error {
	exited := make([]chan struct{}, len(ids))
	for k, id := range ids {
		ch, err := c.signal(id, syscall.SIGKILL)
		if err != nil {
			return err
		}
		exited[k] = ch
	}
	for k, id := range ids {
		_ = syscall.Kill(c.Node(id).Pid(), syscall.SIGCONT)
		if err := c.wait(id, exited[k], 10*time.Second); err != nil && !isSignalled(err) {
			return err
		}
	}
	return nil
}

// Pause sends SIGSTOP; Resume SIGCONT.
func (c *Cluster) Pause(id int) error {
	_, err := c.signal(id, syscall.SIGSTOP)
	return err
}

func (c *Cluster) Resume(id int) error {
	_, err := c.signal(id, syscall.SIGCONT)
	return err
}

// Status is the part of /v1/status the tools look at.
type Status struct {
	ID         int    `json:"id"`
	Role       string `json:"role"`
	Term       uint64 `json:"term"`
	Leader     int    `json:"leader"`
	Commit     uint64 `json:"commit"`
	Applied    uint64 `json:"applied"`
	Durable    uint64 `json:"durable"`
	Last       uint64 `json:"last"`
	Fence      string `json:"fence"`
	NotServing string `json:"not_serving"`
	WALFailed  bool   `json:"wal_failed"`
	Failure    string `json:"failure"`
	KV         struct {
		Hash         string `json:"hash"`
		AppliedIndex uint64 `json:"applied_index"`
		Keys         int    `json:"keys"`
	} `json:"kv"`
	Snapshot struct {
		Index      uint64            `json:"index"`
		FirstIndex uint64            `json:"first_index"`
		BootRow    string            `json:"boot_row"`
		Stats      map[string]uint64 `json:"stats"`
	} `json:"snapshot"`
	Transport struct {
		BadFrames         uint64 `json:"bad_frames"`
		BadMessages       uint64 `json:"bad_messages"`
		HandshakesRefused uint64 `json:"handshakes_refused"`
	} `json:"transport"`
	Server map[string]uint64 `json:"server_stats"`
	// Voters and Learners: the configuration in force.
	Voters   []int `json:"voters"`
	Learners []int `json:"learners"`
	Vote     int   `json:"vote"`
	// FirstBoot: UNCONFIRMED, CONFIRMED or WIPED; Replica: the replica's
	// counters (votes_granted among them).
	FirstBoot string            `json:"first_boot"`
	Replica   map[string]uint64 `json:"replica_stats"`
	Peers     []struct {
		ID        int  `json:"id"`
		Connected bool `json:"connected"` // this node's connection to the peer is up
	} `json:"peers"`
}

// Status reads node id's /v1/status.
func (c *Cluster) Status(ctx context.Context, id int) (Status, error) {
	var st Status
	req, err := http.NewRequestWithContext(ctx, "GET", c.scheme+"://"+c.Node(id).ClientAddr+"/v1/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("status of node %d: HTTP %d", id, resp.StatusCode)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// poll calls cond every 20ms until it holds or limit passes.
func poll(ctx context.Context, limit time.Duration, what string, cond func(ctx context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if cond(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %v", what, limit)
		case <-t.C:
		}
	}
}

// Transfer asks the cluster (through node via) to hand the leadership to
// node to, and waits until the nodes agree on it.
func (c *Cluster) Transfer(ctx context.Context, via, to int, limit time.Duration) error {
	return poll(ctx, limit, fmt.Sprintf("leadership on node %d", to), func(ctx context.Context) bool {
		req, err := http.NewRequestWithContext(ctx, "POST", c.scheme+"://"+c.Node(via).ClientAddr+"/v1/transfer",
			strings.NewReader(fmt.Sprintf(`{"to":%d}`, to)))
		if err != nil {
			return false
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		lead, err := c.Leader(ctx, 2*time.Second)
		return err == nil && lead == to
	})
}

// WaitUp waits until node id answers /v1/status.
func (c *Cluster) WaitUp(ctx context.Context, id int, limit time.Duration) error {
	return poll(ctx, limit, fmt.Sprintf("node %d up", id), func(ctx context.Context) bool {
		_, err := c.Status(ctx, id)
		return err == nil
	})
}

// Leader waits until the running nodes agree on one leader that says it
// leads, and returns it.
func (c *Cluster) Leader(ctx context.Context, limit time.Duration) (int, error) {
	lead := 0
	err := poll(ctx, limit, "a leader", func(ctx context.Context) bool {
		lead = 0
		for _, n := range c.Nodes {
			if !n.Running() {
				continue
			}
			st, err := c.Status(ctx, n.ID)
			if err != nil {
				return false
			}
			if st.Role == "Leader" {
				if lead != 0 {
					return false
				}
				lead = n.ID
			}
		}
		if lead == 0 {
			return false
		}
		for _, n := range c.Nodes {
			if !n.Running() {
				continue
			}
			if st, err := c.Status(ctx, n.ID); err != nil || st.Leader != lead {
				return false
			}
		}
		return true
	})
	return lead, err
}

// Connected waits until every running node's connection to every other
// running node is up (after a partition heals: the transport redials
// with a backoff of up to a second).
func (c *Cluster) Connected(ctx context.Context, limit time.Duration) error {
	return poll(ctx, limit, "every link connected", func(ctx context.Context) bool {
		for _, n := range c.Nodes {
			if !n.Running() {
				continue
			}
			st, err := c.Status(ctx, n.ID)
			if err != nil {
				return false
			}
			for _, p := range st.Peers {
				if c.Node(p.ID).Running() && !p.Connected {
					return false
				}
			}
		}
		return true
	})
}

// CaughtUp waits until every running node has applied at least index.
func (c *Cluster) CaughtUp(ctx context.Context, index uint64, limit time.Duration) error {
	return poll(ctx, limit, fmt.Sprintf("every node applied %d", index), func(ctx context.Context) bool {
		for _, n := range c.Nodes {
			if !n.Running() {
				continue
			}
			st, err := c.Status(ctx, n.ID)
			if err != nil || st.Applied < index {
				return false
			}
		}
		return true
	})
}
