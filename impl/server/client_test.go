package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/client"
	"github.com/durableraft/durableraft/impl/kvproto"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wire"
)

// TestClientExactlyOnceAcrossLeaderChanges: clients run chains of CAS on
// their own keys through the pipelined client while the leadership moves
// (transfers, the leader stopped and restarted). A CAS applied twice, or
// answered from another request, fails its own chain with a mismatch; with
// sessions every retry gets its first answer, so every chain completes.
func TestClientExactlyOnceAcrossLeaderChanges(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	tc.leader()
	var eps []string
	for id := raft.NodeID(1); id <= 3; id++ {
		eps = append(eps, tc.clients[id])
	}
	const workers, steps = 6, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	unknown := make(chan int, workers)
	done := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := client.New(client.Config{Endpoints: eps, Logger: quiet, RequestTimeout: 20 * time.Second})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			key := []byte(fmt.Sprintf("chain-%d", w))
			var rev uint64
			for k := 0; k < steps; k++ {
				got, err := c.CAS(context.Background(), key, rev, []byte(fmt.Sprint(k)))
				if errors.Is(err, client.ErrUnknown) {
					unknown <- 1
					return
				}
				if err != nil {
					errs <- fmt.Errorf("worker %d step %d: %w", w, k, err)
					return
				}
				rev = got
			}
			v, r, found, err := c.Get(context.Background(), key)
			if err != nil || !found || r != rev || string(v) != fmt.Sprint(steps-1) {
				errs <- fmt.Errorf("worker %d: final read %q rev %d found %v err %v, want rev %d", w, v, r, found, err, rev)
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	// Move the leadership around while the chains run.
	for round := 0; round < 3; round++ {
		select {
		case <-done:
			round = 3
			continue
		case <-time.After(150 * time.Millisecond):
		}
		lead := tc.leader()
		if round == 1 {
			tc.stop(lead)
			tc.start(lead)
			continue
		}
		to := lead%3 + 1
		do(t, "POST", tc.url(lead, "/v1/transfer"), fmt.Sprintf(`{"to":%d}`, to))
	}
	<-done
	close(errs)
	close(unknown)
	for err := range errs {
		t.Error(err)
	}
	n := 0
	for range unknown {
		n++
	}
	if n > 0 {
		t.Logf("%d chains ended with an unknown outcome", n)
	}
	if n == workers {
		t.Fatal("every chain ended unknown: nothing was checked")
	}
}

// TestPipeBadFrames: bad input on the pipelined protocol closes the
// connection and is counted; the node keeps serving.
func TestPipeBadFrames(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	tc.leader()
	n := tc.nodes[1]
	good := wire.AppendFrame(nil, kvproto.FrameRequests, kvproto.EncodeRequests(nil, []kvproto.Request{{ID: 1, Op: kvproto.OpRead, Key: []byte("k")}}))
	flip := append([]byte(nil), good...)
	flip[len(flip)-1] ^= 1
	rows := map[string][]byte{
		"checksum":       flip,
		"oversized":      {wire.Version, kvproto.FrameRequests, 0, 0, 0xff, 0xff, 0xff, 0x7f},
		"peer frame":     wire.AppendFrame(nil, 4, nil),
		"bad payload":    wire.AppendFrame(nil, kvproto.FrameRequests, []byte{1, 0, 0, 0, 9}),
		"bad op":         wire.AppendFrame(nil, kvproto.FrameRequests, append([]byte{1, 0, 0, 0}, make([]byte, 13)...)),
		"bad version":    append([]byte{1, 9}, good[2:]...),
		"reserved flags": append(append([]byte{}, good[:2]...), append([]byte{1, 0}, good[4:]...)...),
	}
	for name, b := range rows {
		before := n.stats.PipeBadFrames.Load()
		c, err := net.Dial("tcp", tc.clients[1])
		if err != nil {
			t.Fatal(err)
		}
		c.Write(b)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = bufio.NewReader(c).ReadByte()
		if err == nil {
			t.Fatalf("%s: connection answered instead of closing", name)
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("%s: connection not closed", name)
		}
		c.Close()
		if n.stats.PipeBadFrames.Load() <= before {
			t.Fatalf("%s: not counted", name)
		}
	}
	// A bad command inside a good frame is a 400-like answer, not a close.
	c, err := client.New(client.Config{Endpoints: []string{tc.clients[1]}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Put(context.Background(), []byte("k"), []byte("v")); err != nil {
		t.Fatalf("a good client after the bad ones: %v", err)
	}
	if _, err := c.Put(context.Background(), nil, []byte("v")); err == nil {
		t.Fatal("an empty key was accepted")
	}
}
