package proc

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestProcessFailingDisk: the leader's disk starts failing every
// fdatasync with EIO (raftd --testing-fail-sync-file). The node stays up,
// acknowledges nothing from then on, and says so in its log, /v1/status
// and /metrics; the other two elect a leader and the clients' writes go
// on being acknowledged. An operator then repairs the disk and restarts
// the node, which catches up. Every acknowledged write is read back and
// the history is linearizable.
func TestProcessFailingDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	eio := t.TempDir()
	d := &diskFault{dir: eio}
	v := execute(t, scenario{name: "eio", clients: 6, seed: 11, mutate: true,
		nodeArgs: func(id int) []string { return []string{"--testing-fail-sync-file", d.trigger(id)} },
		faults: []fault{
			{"the leader's fdatasync fails with EIO", d.fail, 0},
			{"the failed node stays up, says so, acknowledges nothing; the others go on", d.check, 200 * time.Millisecond},
			{"the disk repaired and the node restarted", d.repair, 500 * time.Millisecond},
		}})
	if v.failed() {
		t.Fatalf("the run failed: %v", v)
	}
}

// diskFault is the failing-disk schedule's state: the node whose disk
// failed, and what it had durable then.
type diskFault struct {
	dir     string
	node    int
	durable uint64
}

func (d *diskFault) trigger(id int) string { return filepath.Join(d.dir, fmt.Sprintf("%d.eio", id)) }

// fail turns the leader's disk bad and waits (bounded) until the node
// reports its WAL failed.
func (d *diskFault) fail(r *run) error {
	if err := r.awaitAcked(50); err != nil { // the failing node has data by then
		return err
	}
	lead, err := r.leader()
	if err != nil {
		return err
	}
	d.node = lead
	if err := os.WriteFile(d.trigger(lead), nil, 0o644); err != nil {
		return err
	}
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := r.c.Status(ctx, lead)
		if err == nil && st.WALFailed {
			if st.Role == "Leader" || !strings.Contains(st.NotServing, "WAL failed") || !strings.Contains(st.Failure, "input/output error") {
				return fmt.Errorf("node %d's status after the failure: role %s not_serving %q failure %q", lead, st.Role, st.NotServing, st.Failure)
			}
			d.durable = st.Durable
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %d never reported its WAL failed (last status %+v, %v)", lead, st, err)
		}
		time.Sleep(20 * time.Millisecond) // the status is the condition; bounded above
	}
}

// check: the failed node is alive (the process runs, /healthz answers),
// its log and metrics say so, its durable index has not moved, and the
// other two have a leader that keeps acknowledging writes past it.
func (d *diskFault) check(r *run) error {
	ctx := context.Background()
	n := r.c.Node(d.node)
	if !n.Running() {
		return fmt.Errorf("node %d exited after its disk failed", d.node)
	}
	if err := httpOK("http://" + n.ClientAddr + "/healthz"); err != nil {
		return fmt.Errorf("node %d /healthz: %w", d.node, err)
	}
	if err := logContains(n.LogPath, "WAL FAILED"); err != nil {
		return err
	}
	lead, err := leaderAmong(r, d.node)
	if err != nil {
		return err
	}
	if err := r.awaitAcked(r.ackedCount() + 50); err != nil {
		return fmt.Errorf("the cluster without node %d: %w", d.node, err)
	}
	lst, err := r.c.Status(ctx, lead)
	if err != nil {
		return err
	}
	m, err := scrapeMetrics("http://" + n.ClientAddr + "/metrics")
	if err != nil {
		return err
	}
	st, err := r.c.Status(ctx, d.node)
	if err != nil {
		return err
	}
	switch {
	case m["durableraft_wal_failed"] != 1 || m["durableraft_replica_wal_failures_total"] != 1:
		return fmt.Errorf("node %d's metrics: wal_failed %v, wal_failures_total %v", d.node, m["durableraft_wal_failed"], m["durableraft_replica_wal_failures_total"])
	case st.Durable != d.durable || uint64(m["durableraft_durable_index"]) != d.durable:
		return fmt.Errorf("node %d's durable index moved from %d to %d (metrics %v) with its disk failing", d.node, d.durable, st.Durable, m["durableraft_durable_index"])
	case lst.Commit <= d.durable:
		return fmt.Errorf("the new leader %d's commit %d is not past the failed node's durable %d", lead, lst.Commit, d.durable)
	}
	r.t.Logf("eio: node %d failed at durable %d; leader %d committed %d meanwhile", d.node, d.durable, lead, lst.Commit)
	return nil
}

// repair removes the fault and restarts the node (an operator's repair:
// a failed WAL acknowledges nothing until restarted).
func (d *diskFault) repair(r *run) error {
	if err := os.Remove(d.trigger(d.node)); err != nil {
		return err
	}
	if err := r.c.Kill(d.node); err != nil {
		return err
	}
	if err := r.c.Start(d.node); err != nil {
		return err
	}
	_, err := r.leader()
	return err
}

// leaderAmong waits (bounded) until the running nodes other than except
// agree on a leader among them.
func leaderAmong(r *run, except int) (int, error) {
	ctx := context.Background()
	deadline := time.Now().Add(r.leaderBound())
	for {
		lead, agree := 0, true
		for _, n := range r.c.Nodes {
			if n.ID == except || !n.Running() {
				continue
			}
			st, err := r.c.Status(ctx, n.ID)
			switch {
			case err != nil:
				agree = false
			case lead == 0:
				lead = st.Leader
			case st.Leader != lead:
				agree = false
			}
		}
		if agree && lead != 0 && lead != except {
			return lead, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no leader among the nodes other than %d within %v", except, r.leaderBound())
		}
		time.Sleep(20 * time.Millisecond) // the statuses are the condition; bounded above
	}
}

// awaitAcked waits (bounded) until the clients have n acknowledged
// unique writes.
func (r *run) awaitAcked(n int) error {
	deadline := time.Now().Add(10 * time.Second)
	for r.ackedCount() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d acknowledged writes in 10 s, waiting for %d", r.ackedCount(), n)
		}
		time.Sleep(20 * time.Millisecond) // the clients' acknowledgments are the condition; bounded above
	}
	return nil
}

func (r *run) ackedCount() int {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	return len(r.rec.acked)
}

func httpOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// logContains waits (bounded) for s in a node's log file.
func logContains(path, s string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), s) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s has no %q", path, s)
		}
		time.Sleep(20 * time.Millisecond) // the log file is the condition; bounded above
	}
}

// scrapeMetrics reads a node's /metrics with the Prometheus text parser:
// every unlabelled gauge and counter by name.
func scrapeMetrics(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("/metrics does not parse: %w", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			if len(m.Label) != 0 {
				continue
			}
			switch {
			case m.Gauge != nil:
				out[name] = m.Gauge.GetValue()
			case m.Counter != nil:
				out[name] = m.Counter.GetValue()
			}
		}
	}
	return out, nil
}
