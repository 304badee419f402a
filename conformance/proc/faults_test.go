package proc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/durableraft/durableraft/impl/client"
	"github.com/durableraft/durableraft/impl/wire"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// leaderWait bounds every wait for a leader. An election takes a few
// hundred milliseconds on an idle machine; the bound is for a loaded CI
// machine (at a load of 12, 20 s was once too short), and a wait that
// succeeds returns as soon as the leader is there. A run under a bug
// switch that may wedge the cluster waits wedgedWait: its schedule then
// stops and the check follows.
const (
	leaderWait = 60 * time.Second
	wedgedWait = 20 * time.Second
)

// leaderBound is the bound of this run's waits for a leader.
func (r *run) leaderBound() time.Duration {
	if r.sc.expectFail {
		return wedgedWait
	}
	return leaderWait
}

func (r *run) leader() (int, error) { return r.c.Leader(context.Background(), r.leaderBound()) }

// follower picks a follower of lead at random.
func (r *run) follower(lead int) int {
	f := lead%3 + 1
	if r.rng.IntN(2) == 0 {
		f = f%3 + 1
	}
	if f == lead {
		f = f%3 + 1
	}
	return f
}

func killLeader(r *run) error {
	lead, err := r.leader()
	if err != nil {
		return err
	}
	if err := r.c.Kill(lead); err != nil {
		return err
	}
	if _, err := r.leader(); err != nil {
		return err
	}
	return r.c.Start(lead)
}

func killFollower(r *run) error {
	lead, err := r.leader()
	if err != nil {
		return err
	}
	f := r.follower(lead)
	if err := r.c.Kill(f); err != nil {
		return err
	}
	return r.c.Start(f)
}

// pauseLeader stops the leader for longer than an election timeout: the
// others elect a new one; the old one comes back as a follower.
func pauseLeader(r *run) error {
	lead, err := r.leader()
	if err != nil {
		return err
	}
	if err := r.c.Pause(lead); err != nil {
		return err
	}
	timer := time.NewTimer(time.Second) // the pause itself
	<-timer.C
	return r.c.Resume(lead)
}

// killLeaderAndFollower kills the leader with one follower; the leader
// comes back first and elects with the surviving follower, then the other
// returns.
func killLeaderAndFollower(r *run) error {
	lead, err := r.leader()
	if err != nil {
		return err
	}
	f := r.follower(lead)
	if err := r.c.KillMany(lead, f); err != nil {
		return err
	}
	if err := r.c.Start(lead); err != nil {
		return err
	}
	if _, err := r.leader(); err != nil {
		return err
	}
	timer := time.NewTimer(300 * time.Millisecond) // writes under the new leader before the follower returns
	<-timer.C
	return r.c.Start(f)
}

// killAll kills the whole cluster at once (no node syncs while another
// dies); first lists the nodes that come back first and elect, then the
// others return.
func killAll(r *run, first func(lead int) []int) error {
	lead, err := r.leader()
	if err != nil {
		return err
	}
	if err := r.c.KillMany(1, 2, 3); err != nil {
		return err
	}
	back := map[int]bool{}
	for _, id := range first(lead) {
		back[id] = true
		if err := r.c.Start(id); err != nil {
			return err
		}
	}
	if _, err := r.leader(); err != nil {
		return err
	}
	timer := time.NewTimer(300 * time.Millisecond) // writes under the new leader before the others return
	<-timer.C
	for id := 1; id <= 3; id++ {
		if !back[id] {
			if err := r.c.Start(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// slowFirst moves the leadership to node lead, lets the clients write
// under it, then kills the whole cluster at once and brings back the nodes
// with slow disks (2 and 3, a 50 ms group-commit delay) first, the fast
// one (node 1) last.
//
// With node 1 leading, the kill comes under the clients' traffic: if the
// slow followers acknowledge appended entries, they acknowledged writes
// they had not synced, and come back without them.
//
// With a slow node leading, the clients are held back first (a quiet
// cluster: no commit in flight, so the leader is not waiting on a
// hard-state sync, which would make its log durable before it counts any
// acknowledgment); one key is written, and the kill comes the moment it is
// acknowledged: if the leader counted itself at what it had appended, the
// write was durable only on node 1, which comes back last.
//
// Either way only the correct rules keep every acknowledged write.
func slowFirst(lead int) func(r *run) error {
	return func(r *run) error {
		cur, err := r.leader()
		if err != nil {
			return err
		}
		if err := r.c.Transfer(context.Background(), cur, lead, 20*time.Second); err != nil {
			return err
		}
		timer := time.NewTimer(400 * time.Millisecond) // writes under this leader
		<-timer.C
		if lead == 1 {
			if err := r.c.KillMany(1, 2, 3); err != nil {
				return err
			}
			return killAllRestart(r, []int{2, 3})
		}
		r.rec.gate.Lock()
		defer r.rec.gate.Unlock()
		r.quietWrites++
		if err := r.quietWriteThenKillAll(lead, fmt.Sprintf("quiet/%d", r.quietWrites)); err != nil {
			return err
		}
		return killAllRestart(r, []int{2, 3})
	}
}

// writeThenKillAll writes key through node via and kills the whole
// cluster at once the moment the write is acknowledged.
func (r *run) writeThenKillAll(via int, key string) error {
	c, err := client.New(client.Config{Endpoints: []string{r.c.Node(via).ClientAddr}, Logger: quietLog})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = c.Put(ctx, []byte(key), []byte(key))
	cancel()
	if err != nil {
		return fmt.Errorf("the write before the kill: %w", err)
	}
	if err := r.c.KillMany(1, 2, 3); err != nil {
		return err
	}
	r.ackedByFaults[key] = key
	return nil
}

// quietWriteThenKillAll is writeThenKillAll placed where a write is
// committed without being durable on a slow node: the client's session is
// registered first (its own entry and round trip), then every node's log
// is synced (durable = last on all three: no batching window open), so
// that the quiet write opens a fresh window on the slow nodes and its
// acknowledgment needs only node 1's fdatasync (and, with
// self-counts-appended, the slow leader's append). The kill lands inside
// the window unless the acknowledgment took longer than it (logged).
func (r *run) quietWriteThenKillAll(via int, key string) error {
	c, err := client.New(client.Config{Endpoints: []string{r.c.Node(via).ClientAddr}, Logger: quietLog})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, []byte(key+"/session"), []byte(key)); err != nil {
		return fmt.Errorf("the session's write before the quiet one: %w", err)
	}
	r.ackedByFaults[key+"/session"] = key
	if err := r.waitSynced(ctx); err != nil {
		return err
	}
	start := time.Now()
	if _, err := c.Put(ctx, []byte(key), []byte(key)); err != nil {
		return fmt.Errorf("the write before the kill: %w", err)
	}
	took := time.Since(start)
	if err := r.c.KillMany(1, 2, 3); err != nil {
		return err
	}
	r.ackedByFaults[key] = key
	r.t.Logf("%s acknowledged in %v, the whole cluster killed", key, took.Round(time.Microsecond))
	return nil
}

// waitSynced waits until every node's log is durable to its last entry.
func (r *run) waitSynced(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		synced := true
		for id := 1; id <= 3 && synced; id++ {
			st, err := r.c.Status(ctx, id)
			synced = err == nil && st.Durable == st.Last
		}
		if synced {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the nodes' logs not synced to their last entry: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// followerLast: the old leader and one follower come back first, the
// other follower last.
func followerLast(r *run) error {
	return killAll(r, func(lead int) []int { return []int{lead, r.follower(lead)} })
}

// nodeArgs gives node 1 a fast disk (no group-commit delay) and nodes 2
// and 3 slow ones (--wal-sync-ms 50): the asymmetry slowFirst needs.
func nodeArgs(id int) []string {
	if id == 1 {
		return []string{"--wal-sync-ms", "0"}
	}
	return []string{"--wal-sync-ms", "50"}
}

// bugNodeArgs is nodeArgs with the slow nodes' batching window at 250 ms:
// the quiet write's acknowledgment (one round trip through node 1) and
// the kill must land inside it on a loaded machine.
func bugNodeArgs(id int) []string {
	if id == 1 {
		return []string{"--wal-sync-ms", "0"}
	}
	return []string{"--wal-sync-ms", "250"}
}

// theSchedule is the fault schedule of every run.
func theSchedule() []fault {
	const gap = 500 * time.Millisecond
	return []fault{
		{"warm up", func(*run) error { return nil }, gap},
		{"kill -9 the leader, restart it", killLeader, gap},
		{"kill -9 a follower, restart it", killFollower, gap},
		{"SIGSTOP the leader for 1s", pauseLeader, gap},
		{"bad input on every port of every node", badInput, gap},
		{"kill -9 the leader and a follower at once; the leader back first", killLeaderAndFollower, gap},
		{"kill -9 the whole cluster; a follower back last", followerLast, gap},
		{"node 1 (fast disk) leads; kill -9 the whole cluster; the slow nodes back first", slowFirst(1), gap},
		{"node 2 (slow disk) leads; kill -9 the whole cluster; the slow nodes back first", slowFirst(2), gap},
		{"node 3 (slow disk) leads; kill -9 the whole cluster; the slow nodes back first", slowFirst(3), gap},
		{"node 1 (fast disk) leads; kill -9 the whole cluster; the slow nodes back first", slowFirst(1), gap},
		{"node 2 (slow disk) leads; kill -9 the whole cluster; the slow nodes back first", slowFirst(2), gap},
	}
}

// ackThenKillAll writes one key, and the moment its acknowledgment
// arrives kills the whole cluster at once: with a large group-commit
// delay every node is inside its batching window then (later writes
// pending, unsynced), and the write was synced on a majority (the leader
// and a durable contributor) before it was acknowledged. Two random nodes
// come back first, then the third; the write must be there.
func ackThenKillAll(n int) func(r *run) error {
	return func(r *run) error {
		lead, err := r.leader()
		if err != nil {
			return err
		}
		if err := r.writeThenKillAll(lead, fmt.Sprintf("window/%d", n)); err != nil {
			return err
		}
		first := r.rng.IntN(3) + 1
		return killAllRestart(r, []int{first, first%3 + 1})
	}
}

// killAllRestart brings back the nodes of first, waits for a leader among
// them, then the others.
func killAllRestart(r *run, first []int) error {
	back := map[int]bool{}
	for _, id := range first {
		back[id] = true
		if err := r.c.Start(id); err != nil {
			return err
		}
	}
	if _, err := r.leader(); err != nil {
		return err
	}
	for id := 1; id <= 3; id++ {
		if !back[id] {
			if err := r.c.Start(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// windowSchedule kills durable contributors inside the batching window.
func windowSchedule() []fault {
	const gap = 400 * time.Millisecond
	return []fault{
		{"warm up", func(*run) error { return nil }, gap},
		{"kill -9 a follower inside its batching window", killFollower, gap},
		{"kill -9 the leader inside its batching window", killLeader, gap},
		{"an acknowledged write, then kill -9 of the whole cluster at once", ackThenKillAll(1), gap},
		{"kill -9 the leader and a follower inside their batching windows", killLeaderAndFollower, gap},
		{"an acknowledged write, then kill -9 of the whole cluster at once", ackThenKillAll(2), gap},
		{"an acknowledged write, then kill -9 of the whole cluster at once", ackThenKillAll(3), gap},
	}
}

// badInput sends every node bad input on both ports — a hello of another
// cluster, a hello from a node id not in the cluster, garbage, a frame
// with a wrong checksum, an oversized frame header, bad HTTP — and checks
// that each was refused and counted while the cluster kept serving.
func badInput(r *run) error {
	ctx := context.Background()
	for _, n := range r.c.Nodes {
		before, err := r.c.Status(ctx, n.ID)
		if err != nil {
			return err
		}
		hello := func(cluster, from uint64) []byte {
			var e wire.Encoder
			e.U64(cluster)
			e.U64(from)
			e.U64(uint64(n.ID))
			e.String("127.0.0.1:1")
			return wire.AppendFrame(nil, 1, e.B)
		}
		bad := wire.AppendFrame(nil, 16, []byte{1, 0, 0, 0})
		bad[len(bad)-1] ^= 1
		cluster, err := clusterID(n.DataDir)
		if err != nil {
			return err
		}
		peerInputs := [][]byte{hello(cluster^1, 1), hello(cluster, 99), []byte("garbage\r\n\r\n"), {1, 4, 0, 0, 0xff, 0xff, 0xff, 0xff}}
		for _, b := range peerInputs {
			if err := sendAndExpectClose(n.PeerAddr, b); err != nil {
				return fmt.Errorf("peer port of %d: %w", n.ID, err)
			}
		}
		for _, b := range [][]byte{bad, {1, 16, 0, 0, 0xff, 0xff, 0xff, 0x7f}} {
			if err := sendAndExpectClose(n.ClientAddr, b); err != nil {
				return fmt.Errorf("client port of %d: %w", n.ID, err)
			}
		}
		resp, err := http.Post("http://"+n.ClientAddr+"/v1/transfer", "application/json", strings.NewReader(`{"to":`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			return fmt.Errorf("bad JSON on %d: HTTP %d", n.ID, resp.StatusCode)
		}
		after, err := r.c.Status(ctx, n.ID)
		if err != nil {
			return err
		}
		if after.Transport.HandshakesRefused < before.Transport.HandshakesRefused+2 || after.Transport.BadFrames <= before.Transport.BadFrames ||
			after.Server["pipe_bad_frames"] < before.Server["pipe_bad_frames"]+2 || after.Server["bad_requests"] <= before.Server["bad_requests"] {
			return fmt.Errorf("node %d did not count the bad input: before %+v %v, after %+v %v", n.ID, before.Transport, before.Server, after.Transport, after.Server)
		}
	}
	return nil
}

// sendAndExpectClose writes b and requires the other side to close the
// connection (within 5 s) without a crash.
func sendAndExpectClose(addr string, b []byte) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write(b); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf) // a refusal frame may come first
		if err == nil {
			continue
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return fmt.Errorf("%q: the connection stayed open", b[:min(len(b), 16)])
		}
		return nil
	}
}

// clusterID reads the cluster id a node wrote into its data directory.
func clusterID(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		return 0, err
	}
	var c struct {
		ID string `json:"cluster_id"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return 0, err
	}
	return strconv.ParseUint(c.ID, 16, 64)
}
