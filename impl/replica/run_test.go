package replica

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// chanNet is an in-process network for production-mode runners: Send
// hands every message to the recipient's Deliver.
type chanNet struct {
	mu      sync.Mutex
	runners map[raft.NodeID]*Runner
}

type chanTransport struct {
	net *chanNet
}

func (t chanTransport) Send(ms []Message) {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	for _, m := range ms {
		if rn := t.net.runners[m.To]; rn != nil {
			rn.Deliver(m)
		}
	}
}

// lockedSM is a state machine whose applied entries another goroutine
// reads.
type lockedSM struct {
	mu      sync.Mutex
	applied []raft.Entry
	changed chan struct{} // rung (capacity 1) on every apply
}

func (s *lockedSM) Apply(e raft.Entry) []byte {
	s.mu.Lock()
	s.applied = append(s.applied, e)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return e.Data
}

// TestRunnerCluster runs three replicas in production mode: goroutines,
// the real clock, the real WAL on the OS disk. Concurrent proposals all
// commit, each once, in the same order on every replica.
func TestRunnerCluster(t *testing.T) {
	ids := []raft.NodeID{1, 2, 3}
	net := &chanNet{runners: map[raft.NodeID]*Runner{}}
	sms := map[raft.NodeID]*lockedSM{}
	changed := make(chan struct{}, 1) // any replica applied something
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var reps []*Replica
	for _, id := range ids {
		w, rec, err := wal.Open(vfs.OS{}, t.TempDir(), wal.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		sm := &lockedSM{changed: changed}
		sms[id] = sm
		cfg := raft.Config{ID: id, Voters: ids, ElectionTick: 10, HeartbeatTick: 1, Rand: rand.New(rand.NewPCG(uint64(id), 7)),
			PreVote: true, CheckQuorum: true}
		r, err := New(Config{Raft: cfg, WAL: w, Recovery: rec, StateMachine: sm, Transport: chanTransport{net}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r)
		rn := NewRunner(r, RunOptions{TickInterval: 5 * time.Millisecond})
		net.mu.Lock()
		net.runners[id] = rn
		net.mu.Unlock()
		wg.Add(1)
		go func() { defer wg.Done(); rn.Run(ctx) }()
	}
	defer func() {
		cancel()
		wg.Wait()
		for _, r := range reps {
			if err := r.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
	}()
	// Find the leader: propose to each until one accepts.
	deadline := time.Now().Add(20 * time.Second)
	var leader *Runner
	for leader == nil {
		if time.Now().After(deadline) {
			t.Fatal("no leader within 20s")
		}
		for _, id := range ids {
			rn := net.runners[id]
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			_, err := rn.Propose(pctx, []byte("probe"))
			pcancel()
			if err == nil {
				leader = rn
				break
			}
		}
	}
	const clients, each = 8, 25
	// A loaded machine (this runs under -race beside other tests) may
	// depose the leader mid-run: check-quorum with 50 ms election
	// timeouts. ErrNotLeader and ErrLost are definite (the entry was not
	// appended, or was overwritten uncommitted), so the proposal goes to
	// the next runner, bounded by the deadline; any other error fails.
	var leaderMu sync.Mutex
	propose := func(data string) error {
		for k := 0; ; k++ {
			leaderMu.Lock()
			rn := leader
			leaderMu.Unlock()
			pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
			res, err := rn.Propose(pctx, []byte(data))
			pcancel()
			if err == nil {
				if string(res.Value) != data {
					return fmt.Errorf("result %q for %q", res.Value, data)
				}
				return nil
			}
			if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrLost) {
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("no leader took %q within 20s: %w", data, err)
			}
			leaderMu.Lock()
			if leader == rn {
				leader = net.runners[ids[k%len(ids)]]
			}
			leaderMu.Unlock()
		}
	}
	var pwg sync.WaitGroup
	errs := make(chan error, clients*each)
	for c := 0; c < clients; c++ {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for k := 0; k < each; k++ {
				if err := propose(fmt.Sprintf("c%d-%d", c, k)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	pwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("proposal: %v", err)
	}
	// Every replica applies the same sequence (wait until all caught up).
	want := func() []raft.Entry {
		sm := sms[ids[0]]
		sm.mu.Lock()
		defer sm.mu.Unlock()
		return append([]raft.Entry(nil), sm.applied...)
	}
	for {
		ok := true
		ref := want()
		seen := map[string]int{}
		for _, e := range ref {
			seen[string(e.Data)]++
		}
		for c := 0; c < clients; c++ {
			for k := 0; k < each; k++ {
				if seen[fmt.Sprintf("c%d-%d", c, k)] != 1 {
					ok = false
				}
			}
		}
		for _, id := range ids[1:] {
			sm := sms[id]
			sm.mu.Lock()
			if len(sm.applied) < len(ref) {
				ok = false
			} else {
				for i := range ref {
					if sm.applied[i].Index != ref[i].Index || sm.applied[i].Term != ref[i].Term || string(sm.applied[i].Data) != string(ref[i].Data) {
						t.Fatalf("n%d applied %v at %d, n%d %v", id, sm.applied[i], i, ids[0], ref[i])
					}
				}
			}
			sm.mu.Unlock()
		}
		if ok {
			break
		}
		select {
		case <-changed:
		case <-time.After(time.Until(deadline)):
			t.Fatal("replicas did not converge within 20s")
		}
	}
}
