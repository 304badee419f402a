package proc

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/client"
	"github.com/durableraft/durableraft/impl/procs"
)

// TestProcessWipedMember: issue 18's "a wiped member restarted under its
// old id never votes". Three raftd under client load; a follower is
// killed, its data directory removed, and it is restarted with the same
// id and flags (a first boot, as far as it can tell). Its peers tell it
// the cluster is past its first boot and does not know this data
// directory: /v1/status says first_boot WIPED and its log says why and
// what to do. Then the leader is killed, so that the other follower
// campaigns (pre-vote off, so each attempt is a real vote request) and
// needs the wiped member's vote: it never gets it (votes_granted 0, no
// vote in the status), however many elections it starts. The leader
// restarts, the cluster goes on; the history is linearizable and every
// acknowledged write is present. With -testing-bugs wiped-votes (the
// code before the rule) the wiped member grants the vote: the subtest
// shows what the rule prevents.
func TestProcessWipedMember(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	for _, tc := range []struct {
		name, bugs string
	}{{"fixed", "no-pre-vote"}, {"bug", "no-pre-vote,wiped-votes"}} {
		t.Run(tc.name, func(t *testing.T) { wipedMemberRun(t, tc.bugs, tc.name == "bug") })
	}
}

func wipedMemberRun(t *testing.T, bugs string, bug bool) {
	out, err := os.MkdirTemp("", "raftd-proc-wiped-")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--testing-lossy-fs", "--tick-ms", "20", "--request-timeout", "3s", "--testing-bugs", bugs}
	c, err := procs.New(procs.Config{Raftd: raftdBin, Dir: out, Size: 3, Args: func(int) []string { return args }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.KillAll()
	m := &membershipRun{t: t, c: c, out: out}
	if err := c.StartAll(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lead, err := c.Leader(ctx, leaderWait)
	if err != nil {
		m.fatal(err)
	}
	rec := &recorder{start: time.Now(), acked: map[string]string{}}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for k := 0; k < 3; k++ {
		cl, err := client.New(client.Config{Endpoints: c.Endpoints(), RequestTimeout: 4 * time.Second, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			rec.worker(wctx, k, cl, []string{"w/a", "w/b"}, 100000, 31)
		}()
	}
	wiped := lead%3 + 1
	other := 6 - lead - wiped
	if !bug {
		for _, id := range []int{1, 2, 3} {
			if st, err := c.Status(ctx, id); err != nil || st.FirstBoot != "CONFIRMED" {
				m.fatal(fmt.Errorf("node %d at the start: first_boot %q (%v)", id, st.FirstBoot, err))
			}
		}
	}
	m.waitCommit(lead, 50)
	if err := c.Kill(wiped); err != nil {
		m.fatal(err)
	}
	if err := os.RemoveAll(c.Node(wiped).DataDir); err != nil {
		m.fatal(err)
	}
	t.Logf("wiped: node %d's data directory removed; restarting it under its old id", wiped)
	if err := c.Start(wiped); err != nil {
		m.fatal(err)
	}
	if err := c.WaitUp(ctx, wiped, 20*time.Second); err != nil {
		m.fatal(err)
	}
	if !bug {
		m.waitStatus(wiped, "first_boot WIPED", func(st procs.Status) bool { return st.FirstBoot == "WIPED" })
		logb, _ := os.ReadFile(c.Node(wiped).LogPath)
		if !strings.Contains(string(logb), "WIPED: this member's data directory was wiped") {
			m.fatal(fmt.Errorf("node %d's log does not say it was wiped", wiped))
		}
	}
	m.waitCommit(lead, 50) // the cluster goes on with the wiped member passive
	if err := c.Kill(lead); err != nil {
		m.fatal(err)
	}
	// The other follower campaigns, again and again; only the wiped
	// member could give it a quorum.
	st0, err := c.Status(ctx, other)
	if err != nil {
		m.fatal(err)
	}
	m.waitStatus(other, "five more terms, or a new leader", func(st procs.Status) bool {
		return st.Term >= st0.Term+5 || (st.Leader != 0 && st.Leader != lead)
	})
	st, err := c.Status(ctx, wiped)
	if err != nil {
		m.fatal(err)
	}
	granted := st.Replica["votes_granted"]
	t.Logf("wiped: node %d granted %d votes while node %d campaigned (term %d -> now), vote %d", wiped, granted, other, st0.Term, st.Vote)
	if !bug && (granted != 0 || st.Vote != 0 || st.Role != "Follower") {
		m.fatal(fmt.Errorf("the wiped member voted: %d votes granted, vote %d, role %s", granted, st.Vote, st.Role))
	}
	if bug && granted == 0 && st.Role != "Leader" {
		m.fatal(fmt.Errorf("-testing-bugs wiped-votes: the wiped member neither granted a vote nor was elected"))
	}
	if err := c.Start(lead); err != nil {
		m.fatal(err)
	}
	newLead, err := c.Leader(ctx, leaderWait)
	if err != nil {
		m.fatal(err)
	}
	m.waitCommit(newLead, 50)
	stop()
	wg.Wait()
	if bug {
		return // what the rule prevents is shown; the cluster's end state is not the point
	}
	if st, err := c.Status(ctx, wiped); err != nil || st.Replica["votes_granted"] != 0 || st.FirstBoot != "WIPED" {
		m.fatal(fmt.Errorf("the wiped member at the end: %+v %v", st, err))
	}
	if err := c.Kill(wiped); err != nil { // outside the cluster's checks: it is to be replaced
		m.fatal(err)
	}
	v := m.check(rec, []int{lead, other})
	if v.failed() {
		t.Fatalf("wiped: the run failed: %v (logs in %s)", v, out)
	}
	if !t.Failed() {
		os.RemoveAll(out)
	}
}

// waitCommit waits until node id's commit index has grown by n.
func (m *membershipRun) waitCommit(id int, n uint64) {
	m.t.Helper()
	st, err := m.c.Status(context.Background(), id)
	if err != nil {
		m.fatal(err)
	}
	m.waitStatus(id, fmt.Sprintf("commit beyond %d", st.Commit+n), func(s procs.Status) bool { return s.Commit >= st.Commit+n })
}

// waitStatus polls node id's status until cond holds (generous bound: a
// loaded CI machine).
func (m *membershipRun) waitStatus(id int, what string, cond func(procs.Status) bool) {
	m.t.Helper()
	deadline := time.Now().Add(leaderWait)
	for {
		st, err := m.c.Status(context.Background(), id)
		if err == nil && cond(st) {
			return
		}
		if time.Now().After(deadline) {
			m.fatal(fmt.Errorf("node %d: %s: not within %v (last status %+v, %v)", id, what, leaderWait, st, err))
		}
		tick := time.NewTimer(50 * time.Millisecond) // a poll interval, not a wait for a condition
		<-tick.C
	}
}
