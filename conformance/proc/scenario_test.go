package proc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/durableraft/durableraft/impl/client"
	"github.com/durableraft/durableraft/impl/procs"
)

// scenario is one run: the flags every node gets, the fault schedule.
type scenario struct {
	name     string
	args     []string // extra raftd flags (test switches)
	nodeArgs func(id int) []string
	// expectFail: the run is meant to fail (a bug switch); its logs are
	// kept only when it does not.
	expectFail bool
	clients    int
	seed       uint64
	faults     []fault
	// proxy routes the peer traffic through a procs.Proxy (r.c.Proxy).
	proxy bool
	// Every run traces: every node writes its trace (raftd --trace),
	// merged by clock and checked against the spec after the run, the
	// whole run (tracecheck_test.go). A bug switch's run (expectFail) is
	// checked against the spec under the same switches (the trace's Init
	// declares them): the code with a bug re-introduced still does what
	// the model with that bug says.
	//
	// mutate: once the merged trace is accepted, one message's term is
	// changed and the checker must reject the run at that event.
	mutate bool
	// inspectTraces looks at the run's trace directory after
	// the check (the nodes stopped).
	inspectTraces func(t *testing.T, dir string)
}

// fault is one step of the schedule; gap is the traffic time after it.
type fault struct {
	name string
	do   func(r *run) error
	gap  time.Duration
}

// run is a scenario in progress.
type run struct {
	t   *testing.T
	sc  scenario
	c   *procs.Cluster
	rng *rand.Rand
	out string // kept on failure: logs and the visualization
	// ackedByFaults: writes the faults themselves made and had
	// acknowledged (checked like the clients').
	ackedByFaults map[string]string
	rec           *recorder
	quietWrites   int
}

// verdict is what a run found.
type verdict struct {
	missing      []string // acknowledged unique writes absent at the end
	linearizable porcupine.CheckResult
	diverged     string // nodes that applied the same index to different states
	ops, unknown int
	visualized   string
}

func (v verdict) failed() bool {
	return len(v.missing) > 0 || v.linearizable != porcupine.Ok || v.diverged != ""
}

func (v verdict) String() string {
	s := fmt.Sprintf("ops=%d unknown=%d linearizable=%v missing=%d", v.ops, v.unknown, v.linearizable, len(v.missing))
	if len(v.missing) > 0 {
		s += fmt.Sprintf(" (e.g. %v)", v.missing[:min(5, len(v.missing))])
	}
	if v.diverged != "" {
		s += " diverged: " + v.diverged
	}
	if v.visualized != "" {
		s += " visualization: " + v.visualized
	}
	return s
}

// execute runs the scenario and returns its verdict; setup failures (a
// node that does not start, no leader within its bound) fail the test.
func execute(t *testing.T, sc scenario) verdict {
	t.Helper()
	out, err := os.MkdirTemp("", "raftd-proc-"+sc.name+"-")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--testing-lossy-fs", "--tick-ms", "20", "--request-timeout", "3s"}, sc.args...)
	traceDir := filepath.Join(out, "trace")
	traced := true
	if traced {
		args = append(args, "--trace", traceDir)
	}
	if extra := os.Getenv("RAFTD_PROC_EXTRA_ARGS"); extra != "" {
		args = append(args, strings.Fields(extra)...) // for experiments: e.g. a bug switch on a passing test
	}
	perNode := sc.nodeArgs
	if perNode == nil {
		perNode = func(int) []string { return nil }
	}
	c, err := procs.New(procs.Config{Raftd: raftdBin, Dir: out, Size: 3, PeerProxy: sc.proxy,
		Args: func(id int) []string { return append(perNode(id), args...) }})
	if err != nil {
		t.Fatal(err)
	}
	if c.Proxy != nil {
		defer c.Proxy.Close()
	}
	r := &run{t: t, sc: sc, c: c, rng: rand.New(rand.NewPCG(sc.seed, 1)), out: out, ackedByFaults: map[string]string{}}
	defer c.KillAll()
	ctx := context.Background()
	if err := c.StartAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(ctx, leaderWait); err != nil {
		r.fatal(err)
	}
	rec := &recorder{start: time.Now(), acked: map[string]string{}}
	r.rec = rec
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for k := 0; k < sc.clients; k++ {
		cl, err := client.New(client.Config{Endpoints: c.Endpoints(), RequestTimeout: 4 * time.Second, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			rec.worker(wctx, k, cl, []string{"r/a", "r/b", "r/c"}, 100000, sc.seed)
		}()
	}
faults:
	for _, f := range sc.faults {
		t.Logf("%s: %s", sc.name, f.name)
		switch err := f.do(r); {
		case err != nil && sc.expectFail:
			// A bug switch may wedge the cluster (e.g. self-counts-appended:
			// the writes acknowledged on the leader's page cache survive only
			// on a fenced member, so the restarted leader cannot win): stop
			// the schedule and let the check bring every node back and read
			// every acknowledged write.
			t.Logf("%s: %s: %v; the schedule stops here, the check follows", sc.name, f.name, err)
			break faults
		case err != nil:
			stop()
			wg.Wait()
			r.fatal(fmt.Errorf("%s: %w", f.name, err))
		}
		timer := time.NewTimer(f.gap) // traffic under the fault schedule, not a wait for a condition
		<-timer.C
	}
	stop()
	wg.Wait()
	for k, v := range r.ackedByFaults {
		rec.acked[k] = v
	}
	v := r.check(rec)
	if err := c.StopAll(); err != nil {
		t.Errorf("%s: a node did not stop cleanly: %v", sc.name, err)
	}
	if traced {
		r.checkRunTraces(traceDir)
		if sc.inspectTraces != nil {
			sc.inspectTraces(t, traceDir)
		}
	}
	if v.failed() == sc.expectFail && !t.Failed() {
		os.RemoveAll(out)
	} else {
		t.Logf("%s: logs kept in %s", sc.name, out)
	}
	return v
}

func (r *run) fatal(err error) {
	r.t.Helper()
	r.t.Fatalf("%s: %v (logs in %s)", r.sc.name, err, r.out)
}

// check brings every node back, waits until they agree, then reads every
// acknowledged unique write and checks the history.
func (r *run) check(rec *recorder) verdict {
	ctx := context.Background()
	c := r.c
	if c.Proxy != nil {
		c.Proxy.HealAll()
	}
	for _, n := range c.Nodes {
		if !n.Running() {
			if err := c.Start(n.ID); err != nil {
				r.fatal(err)
			}
		}
		_ = c.Resume(n.ID)
	}
	lead, err := c.Leader(ctx, 30*time.Second)
	if err != nil {
		r.fatal(err)
	}
	cl, err := client.New(client.Config{Endpoints: []string{c.Node(lead).ClientAddr}, RequestTimeout: 10 * time.Second, Logger: quietLog})
	if err != nil {
		r.fatal(err)
	}
	defer cl.Close()
	// A write through the leader, then every node caught up to it: the
	// state hashes must then agree at equal applied indexes.
	if _, err := cl.Put(ctx, []byte("final"), []byte("x")); err != nil {
		r.fatal(fmt.Errorf("final write: %w", err))
	}
	st, err := c.Status(ctx, lead)
	if err != nil {
		r.fatal(err)
	}
	if err := c.CaughtUp(ctx, st.Commit, 30*time.Second); err != nil {
		r.fatal(err)
	}
	v := verdict{ops: len(rec.ops), unknown: rec.unknown}
	v.diverged = r.compareHashes(ctx)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for key, want := range rec.acked {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			got, _, found, err := cl.Get(ctx, []byte(key))
			if err != nil {
				r.t.Errorf("reading %s: %v", key, err)
				return
			}
			if !found || string(got) != want {
				mu.Lock()
				v.missing = append(v.missing, key)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res, info := porcupine.CheckOperationsVerbose(registerModel, rec.ops, 60*time.Second)
	v.linearizable = res
	if res != porcupine.Ok {
		path := filepath.Join(r.out, "history.html")
		if err := porcupine.VisualizePath(registerModel, info, path); err == nil {
			v.visualized = path
		}
	}
	r.t.Logf("%s: %d acknowledged unique writes, %d register puts, %d gets, %d unknown, %d definite failures, %d read errors; %v",
		r.sc.name, len(rec.acked), rec.puts, rec.gets, rec.unknown, rec.definite, rec.readErrs, v)
	return v
}

// compareHashes polls (bounded) until every node reports the same applied
// index, and compares their state hashes there.
func (r *run) compareHashes(ctx context.Context) string {
	ids := make([]int, len(r.c.Nodes))
	for k, n := range r.c.Nodes {
		ids[k] = n.ID
	}
	return compareHashesOf(ctx, r.c, ids)
}

// compareHashesOf polls (bounded) until the nodes ids report one applied
// index, and compares their state hashes there ("" when they agree, or when
// the index kept moving for 10 s: the idle no-ops keep it moving, which is
// not a divergence).
func compareHashesOf(ctx context.Context, c *procs.Cluster, ids []int) string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var applied []uint64
		var hashes []string
		for _, id := range ids {
			st, err := c.Status(ctx, id)
			if err != nil {
				return fmt.Sprintf("status of %d: %v", id, err)
			}
			applied, hashes = append(applied, st.KV.AppliedIndex), append(hashes, st.KV.Hash)
		}
		if slices.Min(applied) == slices.Max(applied) {
			for k := range hashes {
				if hashes[k] != hashes[0] {
					return fmt.Sprintf("at index %d the hashes are %s", applied[0], strings.Join(hashes, " "))
				}
			}
			return ""
		}
		if time.Now().After(deadline) {
			return ""
		}
		timer := time.NewTimer(20 * time.Millisecond) // the statuses are the condition; bounded above
		<-timer.C
	}
}
