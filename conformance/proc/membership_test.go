package proc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/durableraft/durableraft/impl/client"
	"github.com/durableraft/durableraft/impl/procs"
)

// TestProcessMembership: issue 18's real-process test. Three raftd
// processes on the lossy file system grow to five (raftctl members add,
// raftd --join with the flags the add printed, promote once caught up),
// lose two (kill -9: the leader and a follower), remove them and replace
// them with two new ids, all under client load. At the end: the
// configuration is the five live nodes, the removed ids are refused, every
// acknowledged write is present, the live nodes agree on the state hash,
// and porcupine finds the history linearizable. No traces: the trace
// checker's membership runs need ids 1..N with N <= 5 from line 0
// (docs/membership.md), and this run uses seven ids.
func TestProcessMembership(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	out, err := os.MkdirTemp("", "raftd-proc-membership-")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--testing-lossy-fs", "--tick-ms", "20", "--request-timeout", "3s"}
	c, err := procs.New(procs.Config{Raftd: raftdBin, Dir: out, Size: 3, Args: func(int) []string { return args }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.KillAll()
	m := &membershipRun{t: t, c: c, out: out}
	if err := c.StartAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(context.Background(), leaderWait); err != nil {
		m.fatal(err)
	}

	rec := &recorder{start: time.Now(), acked: map[string]string{}}
	wctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for k := 0; k < 6; k++ {
		// Every client knows all seven endpoints up front: nodes that
		// are not up yet, or are dead, cost it a failed dial.
		cl, err := client.New(client.Config{Endpoints: m.futureEndpoints(7), RequestTimeout: 4 * time.Second, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			rec.worker(wctx, k, cl, []string{"r/a", "r/b", "r/c"}, 100000, 18)
		}()
	}

	m.grow(4)
	m.grow(5)
	m.wantConfig([]int{1, 2, 3, 4, 5}, nil)
	lead, err := c.Leader(context.Background(), leaderWait)
	if err != nil {
		m.fatal(err)
	}
	lost := []int{lead, lead%3 + 1} // the leader and another initial member
	t.Logf("membership: killing %v", lost)
	if err := c.KillMany(lost...); err != nil {
		m.fatal(err)
	}
	for _, id := range lost {
		m.raftctl(true, "members", "remove", "--wait", "30s", fmt.Sprint(id))
	}
	m.grow(6)
	m.grow(7)
	var live []int
	for _, n := range c.Nodes {
		if !slices.Contains(lost, n.ID) {
			live = append(live, n.ID)
		}
	}
	m.wantConfig(live, nil)
	// A removed id is never reused: refused, with its code.
	if o := m.raftctl(false, "members", "add", fmt.Sprint(lost[0]), c.Node(lost[0]).PeerAddr); !strings.Contains(o, "removed_id") {
		m.fatal(fmt.Errorf("re-adding removed node %d: %q", lost[0], o))
	}
	timer := time.NewTimer(time.Second) // traffic in the final configuration, not a wait for a condition
	<-timer.C
	stop()
	wg.Wait()
	v := m.check(rec, live)
	if v.failed() {
		t.Fatalf("membership: the run failed: %v (logs in %s)", v, out)
	}
	if err := c.StopAll(); err != nil {
		t.Errorf("membership: a node did not stop cleanly: %v", err)
	}
	if !t.Failed() {
		os.RemoveAll(out)
	}
}

type membershipRun struct {
	t   *testing.T
	c   *procs.Cluster
	out string
	// endpoints: the client addresses of nodes 1..7, allocated up front.
	endpoints []string
}

func (m *membershipRun) fatal(err error) {
	m.t.Helper()
	m.t.Fatalf("membership: %v (logs in %s)", err, m.out)
}

// futureEndpoints allocates the nodes up to n (not started) and returns
// every node's client address.
func (m *membershipRun) futureEndpoints(n int) []string {
	for len(m.c.Nodes) < n {
		if _, err := m.c.AddNode(); err != nil {
			m.fatal(err)
		}
	}
	return m.c.Endpoints()
}

// liveEndpoints are the running nodes' client addresses.
func (m *membershipRun) liveEndpoints() string {
	var eps []string
	for _, n := range m.c.Nodes {
		if n.Running() {
			eps = append(eps, n.ClientAddr)
		}
	}
	return strings.Join(eps, ",")
}

// raftctl runs raftctl against the running nodes; ok says whether it must
// succeed. It returns stdout and stderr together.
func (m *membershipRun) raftctl(ok bool, args ...string) string {
	m.t.Helper()
	cmd := exec.Command(raftctlBin, append([]string{"--endpoints", m.liveEndpoints(), "--timeout", "10s"}, args...)...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	if ok && err != nil {
		m.fatal(fmt.Errorf("raftctl %v: %v: %s", args, err, b.String()))
	}
	if !ok && err == nil {
		m.fatal(fmt.Errorf("raftctl %v succeeded: %s", args, b.String()))
	}
	m.t.Logf("membership: raftctl %s: %s", strings.Join(args, " "), strings.TrimSpace(b.String()))
	return b.String()
}

// grow adds node id: raftctl members add, raftd --join with the flags it
// printed, the learner caught up, raftctl members promote.
func (m *membershipRun) grow(id int) {
	m.t.Helper()
	m.futureEndpoints(id)
	n := m.c.Node(id)
	o := m.raftctl(true, "members", "add", fmt.Sprint(id), n.PeerAddr)
	n.Peers, n.Extra = joinFlags(o)
	if n.Peers == "" || len(n.Extra) != 5 {
		m.fatal(fmt.Errorf("raftctl members add %d printed no join flags: %q", id, o))
	}
	if err := m.c.Start(id); err != nil {
		m.fatal(err)
	}
	ctx := context.Background()
	if err := m.c.WaitUp(ctx, id, 20*time.Second); err != nil {
		m.fatal(err)
	}
	if st, err := m.c.Status(ctx, id); err != nil || st.Vote != 0 || st.Role == "Leader" || st.Role == "Candidate" {
		m.fatal(fmt.Errorf("the joining node %d voted or campaigned: %+v %v", id, st, err))
	}
	m.raftctl(true, "members", "promote", "--wait", "30s", fmt.Sprint(id))
}

// joinFlags picks --peers and the --join flags out of raftctl members
// add's output.
func joinFlags(o string) (string, []string) {
	f := strings.Fields(o)
	var peers string
	var extra []string
	for k := 0; k < len(f); k++ {
		switch f[k] {
		case "--join":
			extra = append(extra, f[k])
		case "--join-cluster-id", "--join-initial-voters":
			if k+1 < len(f) {
				extra = append(extra, f[k], f[k+1])
				k++
			}
		case "--peers":
			if k+1 < len(f) {
				peers = f[k+1]
				k++
			}
		}
	}
	return peers, extra
}

// wantConfig waits (bounded) until every running node reports the voters
// and learners given.
func (m *membershipRun) wantConfig(voters, learners []int) {
	m.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		agree := true
		for _, n := range m.c.Nodes {
			if !n.Running() {
				continue
			}
			st, err := m.c.Status(context.Background(), n.ID)
			if err != nil || !slices.Equal(st.Voters, voters) || !slices.Equal(st.Learners, learners) {
				agree = false
			}
		}
		if agree {
			return
		}
		if time.Now().After(deadline) {
			m.fatal(fmt.Errorf("the running nodes do not all report voters %v learners %v", voters, learners))
		}
		timer := time.NewTimer(50 * time.Millisecond) // polling a condition with a bound
		<-timer.C
	}
}

// check: a write through the leader, every live node caught up to it
// with the same state hash, every acknowledged unique write read back,
// the history checked by porcupine.
func (m *membershipRun) check(rec *recorder, live []int) verdict {
	ctx := context.Background()
	lead, err := m.c.Leader(ctx, leaderWait)
	if err != nil {
		m.fatal(err)
	}
	cl, err := client.New(client.Config{Endpoints: []string{m.c.Node(lead).ClientAddr}, RequestTimeout: 10 * time.Second, Logger: quietLog})
	if err != nil {
		m.fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Put(ctx, []byte("final"), []byte("x")); err != nil {
		m.fatal(fmt.Errorf("final write: %w", err))
	}
	st, err := m.c.Status(ctx, lead)
	if err != nil {
		m.fatal(err)
	}
	if err := m.c.CaughtUp(ctx, st.Commit, 30*time.Second); err != nil {
		m.fatal(err)
	}
	v := verdict{ops: len(rec.ops), unknown: rec.unknown}
	v.diverged = compareHashesOf(context.Background(), m.c, live)
	for key, want := range rec.acked {
		got, _, found, err := cl.Get(ctx, []byte(key))
		if err != nil {
			m.t.Errorf("reading %s: %v", key, err)
			continue
		}
		if !found || string(got) != want {
			v.missing = append(v.missing, key)
		}
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, rec.ops, 60*time.Second)
	v.linearizable = res
	if res != porcupine.Ok {
		if err := porcupine.VisualizePath(registerModel, info, m.out+"/history.html"); err == nil {
			v.visualized = m.out + "/history.html"
		}
	}
	m.t.Logf("membership: %d acknowledged unique writes, %d register puts, %d gets, %d unknown, %d definite failures; %v",
		len(rec.acked), rec.puts, rec.gets, rec.unknown, rec.definite, v)
	if len(rec.acked) < 50 {
		m.t.Errorf("membership: only %d writes acknowledged: the load did not run", len(rec.acked))
	}
	return v
}
