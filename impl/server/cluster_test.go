package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func testLogger() *slog.Logger {
	if os.Getenv("RAFTD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return quiet
}

// testCluster runs nodes in this process on loopback listeners made up
// front, so that --peers can name their ports.
type testCluster struct {
	t       *testing.T
	dirs    map[raft.NodeID]string
	peers   map[raft.NodeID]string
	clients map[raft.NodeID]string
	mu      sync.Mutex
	nodes   map[raft.NodeID]*Node
	edit    func(*Config)
	// held: the listeners that picked the nodes' ports, kept open until
	// each node's first start takes its own (closing them first let
	// another process's connection take the port: "address already in
	// use" in a -race run of make test).
	held map[string]net.Listener
}

func listenAt(t *testing.T, addr string) net.Listener {
	t.Helper()
	var l net.Listener
	var err error
	for k := 0; k < 50; k++ { // a port just closed may take a moment to free
		if l, err = net.Listen("tcp", addr); err == nil {
			return l
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal(err)
	return nil
}

// listen hands over the listener held for addr at a node's first start,
// else listens again (a restart).
func (tc *testCluster) listen(addr string) net.Listener {
	tc.mu.Lock()
	l, ok := tc.held[addr]
	delete(tc.held, addr)
	tc.mu.Unlock()
	if ok {
		return l
	}
	return listenAt(tc.t, addr)
}

func newTestCluster(t *testing.T, size int, edit func(*Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, dirs: map[raft.NodeID]string{}, peers: map[raft.NodeID]string{}, clients: map[raft.NodeID]string{},
		nodes: map[raft.NodeID]*Node{}, edit: edit, held: map[string]net.Listener{}}
	root := t.TempDir()
	for id := raft.NodeID(1); id <= raft.NodeID(size); id++ {
		tc.dirs[id] = filepath.Join(root, fmt.Sprint(id))
		p, c := listenAt(t, "127.0.0.1:0"), listenAt(t, "127.0.0.1:0")
		tc.peers[id], tc.clients[id] = p.Addr().String(), c.Addr().String()
		tc.held[tc.peers[id]], tc.held[tc.clients[id]] = p, c
	}
	t.Cleanup(func() {
		tc.mu.Lock()
		defer tc.mu.Unlock()
		for _, l := range tc.held {
			l.Close()
		}
	})
	for id := range tc.dirs {
		tc.start(id)
	}
	t.Cleanup(tc.stopAll)
	return tc
}

// testTick is the test clusters' tick: an election timeout of 250-500 ms.
// At 10 ms (100-200 ms) a -race run on a loaded 2-core machine stalled a
// node long enough for an election in tests that require none
// (TestSnapshotCatchUpKV in a clean-clone CI run, TestMetrics).
const testTick = 25 * time.Millisecond

func (tc *testCluster) start(id raft.NodeID) *Node {
	tc.t.Helper()
	cfg := Config{ID: id, DataDir: tc.dirs[id], ClientAddr: tc.clients[id], PeerAddr: tc.peers[id], InitialPeers: tc.peers,
		Logger: testLogger(), TickInterval: testTick,
		Listen: func(addr string) (net.Listener, error) { return tc.listen(addr), nil }}
	if tc.edit != nil {
		tc.edit(&cfg)
	}
	n, err := Open(cfg)
	if err != nil {
		tc.t.Fatal(err)
	}
	n.Start()
	tc.mu.Lock()
	tc.nodes[id] = n
	tc.mu.Unlock()
	return n
}

func (tc *testCluster) stop(id raft.NodeID) {
	tc.mu.Lock()
	n := tc.nodes[id]
	delete(tc.nodes, id)
	tc.mu.Unlock()
	if n != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			tc.t.Errorf("node %d shutdown: %v", id, err)
		}
	}
}

func (tc *testCluster) stopAll() {
	for id := range tc.dirs {
		tc.stop(id)
	}
}

// leader waits for a node that says it leads.
func (tc *testCluster) leader() raft.NodeID {
	tc.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		tc.mu.Lock()
		nodes := make([]*Node, 0, len(tc.nodes))
		for _, n := range tc.nodes {
			nodes = append(nodes, n)
		}
		tc.mu.Unlock()
		for _, n := range nodes {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := n.run.Status(ctx)
			cancel()
			if err == nil && st.Role == raft.RoleLeader {
				return n.cfg.ID
			}
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a bound
	}
	tc.t.Fatal("no leader within 20s")
	return 0
}

func (tc *testCluster) url(id raft.NodeID, path string) string {
	return "http://" + tc.clients[id] + path
}

type reply struct {
	status int
	body   string
	header http.Header
}

func do(t *testing.T, method, url, body string, hdr ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k+1 < len(hdr); k += 2 {
		req.Header.Set(hdr[k], hdr[k+1])
	}
	cl := &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: string(b), header: resp.Header}
}
