package replica

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// lockedHashSM is hashSM read from other goroutines.
type lockedHashSM struct {
	mu sync.Mutex
	h  hashSM
}

func (s *lockedHashSM) Apply(e raft.Entry) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h.Apply(e)
}

func (s *lockedHashSM) Snapshot() (func(io.Writer) error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h.Snapshot()
}

func (s *lockedHashSM) Restore(r io.Reader, index, term uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h.Restore(r, index, term)
}

func (s *lockedHashSM) state() (uint64, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h.index, s.h.hash
}

// runNode is one production-mode member that a test can stop and start.
type runNode struct {
	id     raft.NodeID
	dir    string
	sm     *lockedHashSM
	r      *Replica
	rn     *Runner
	cancel context.CancelFunc
	done   chan struct{}
}

func startRunNode(t *testing.T, n *runNode, ids []raft.NodeID, net *chanNet) {
	t.Helper()
	w, rec, err := wal.Open(vfs.OS{}, filepath.Join(n.dir, "wal"), wal.Options{Logger: quiet, SegmentBytes: 32 << 10, EntryBytesMax: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	n.sm = &lockedHashSM{}
	cfg := raft.Config{ID: n.id, Voters: ids, ElectionTick: 10, HeartbeatTick: 1, Rand: rand.New(rand.NewPCG(uint64(n.id), 9)),
		PreVote: true, CheckQuorum: true}
	so := &SnapshotOptions{FS: vfs.OS{}, Dir: filepath.Join(n.dir, "snap"), Entries: 50, ChunkBytes: 4 << 10}
	r, err := New(Config{Raft: cfg, WAL: w, Recovery: rec, StateMachine: n.sm, Transport: chanTransport{net}, Logger: quiet, Snapshots: so})
	if err != nil {
		t.Fatal(err)
	}
	n.r, n.rn = r, NewRunner(r, RunOptions{TickInterval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan struct{})
	net.mu.Lock()
	net.runners[n.id] = n.rn
	net.mu.Unlock()
	go func() { defer close(n.done); n.rn.Run(ctx) }()
}

func stopRunNode(t *testing.T, n *runNode, net *chanNet) {
	t.Helper()
	net.mu.Lock()
	delete(net.runners, n.id)
	net.mu.Unlock()
	n.cancel()
	<-n.done
	if err := n.r.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRunnerSnapshotCatchUp: production mode (goroutines, the real clock,
// the OS disk; snapshots written and verified on goroutines of their own
// while the replicas go on): a member stopped through 300 writes and
// several compactions restarts, installs a snapshot and catches up.
func TestRunnerSnapshotCatchUp(t *testing.T) {
	ids := []raft.NodeID{1, 2, 3}
	net := &chanNet{runners: map[raft.NodeID]*Runner{}}
	nodes := map[raft.NodeID]*runNode{}
	for _, id := range ids {
		nodes[id] = &runNode{id: id, dir: t.TempDir()}
		startRunNode(t, nodes[id], ids, net)
	}
	defer func() {
		for _, id := range ids {
			if nodes[id].r != nil {
				stopRunNode(t, nodes[id], net)
			}
		}
	}()
	// propose tries the given members in turn (a follower refuses) until
	// one commits the entry.
	propose := func(data string, via []raft.NodeID) {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			for _, id := range via {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := nodes[id].rn.Propose(ctx, []byte(data))
				cancel()
				if err == nil {
					return
				}
			}
		}
		t.Fatalf("proposal %q not committed within 20s", data)
	}
	propose("first", ids) // node 3 may win the first election (it did in a loaded make test run)
	stopRunNode(t, nodes[3], net)
	nodes[3].r = nil
	for k := 0; k < 300; k++ {
		propose(fmt.Sprintf("w%d", k), ids[:2])
	}
	startRunNode(t, nodes[3], ids, net)
	propose("last", ids)
	deadline := time.Now().Add(20 * time.Second)
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for {
		i1, h1 := nodes[1].sm.state()
		i2, h2 := nodes[2].sm.state()
		i3, h3 := nodes[3].sm.state()
		if i3 >= 300 && i3 == max(i1, i2) && (h3 == h1 || h3 == h2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no catch-up within 20s: %d %d %d", i1, i2, i3)
		}
		<-poll.C
	}
	st, err := nodes[3].rn.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// (At least one: under this timing the leader may compact past the
	// follower again while it catches up; the stepped tests count exactly.)
	if st.Snapshots.Installed < 1 {
		t.Fatalf("the follower caught up without a snapshot: %+v", st.Snapshots)
	}
}
