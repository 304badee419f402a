package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/durableraft/durableraft/impl/client"
	"github.com/durableraft/durableraft/impl/raft"
)

// scrape fetches and parses a node's /metrics with the Prometheus text
// parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// series finds the one metric of name whose labels include want (name,
// value pairs); t fails when there is none.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want ...string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no series %s", name)
	}
next:
	for _, m := range f.Metric {
		for k := 0; k+1 < len(want); k += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == want[k] && l.GetValue() == want[k+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no series %s%v", name, want)
	return nil
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := series(t, fams, name, labels...)
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	t.Fatalf("%s is neither a gauge nor a counter", name)
	return 0
}

func histCount(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) (uint64, float64) {
	t.Helper()
	h := series(t, fams, name, labels...).Histogram
	if h == nil {
		t.Fatalf("%s%v is not a histogram", name, labels)
	}
	return h.GetSampleCount(), h.GetSampleSum()
}

// TestMetrics: after writes over HTTP and the pipelined protocol, the
// leader's and a follower's /metrics parse and show every series of
// docs/raftd.md with values that agree with /v1/status and the writes.
func TestMetrics(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	lead := tc.leader()
	const httpWrites, pipeWrites = 5, 5
	for k := 0; k < httpWrites; k++ {
		if r := do(t, "PUT", tc.url(lead, "/v1/kv/m"+itoa(raft.NodeID(k))), "v"); r.status != 200 {
			t.Fatalf("put: %d %s", r.status, r.body)
		}
	}
	cl, err := client.New(client.Config{Endpoints: []string{tc.clients[lead]}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for k := 0; k < pipeWrites; k++ {
		if _, err := cl.Put(ctx, []byte("p"), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	ln := tc.nodes[lead]
	// Every follower has acknowledged something (on a loaded machine the
	// writes may all commit on the leader and one follower while the other
	// is still connecting; its series below are checked for a match >= 1),
	// and the leader's own log is durable past the writes: a leader commits
	// through its followers before its own fdatasync lands (the lag of
	// testdata/replication_lag_leader.txt), so its durable index and synced
	// records may trail the acknowledgments for a moment.
	var st StatusBody
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-poll.C {
		if st, err = ln.status(ctx); err != nil {
			t.Fatal(err)
		}
		acked := len(st.Progress) == len(tc.dirs)-1 && st.Durable >= httpWrites+pipeWrites
		for _, p := range st.Progress {
			acked = acked && p.Match >= 1
		}
		if acked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in 10s, a follower acknowledged nothing or the leader's durable index %d stayed below %d: %+v", st.Durable, httpWrites+pipeWrites, st.Progress)
		}
	}
	fams := scrape(t, tc.url(lead, "/metrics"))

	for _, c := range []struct {
		name string
		min  float64
	}{
		{"durableraft_term", 1}, {"durableraft_commit_index", httpWrites + pipeWrites}, {"durableraft_durable_index", httpWrites + pipeWrites},
		{"durableraft_applied_index", httpWrites + pipeWrites}, {"durableraft_last_index", httpWrites + pipeWrites},
		{"durableraft_learned_commit_index", 1}, {"durableraft_leader_id", float64(lead)}, {"durableraft_is_leader", 1},
		{"durableraft_elections_won_total", 1}, {"durableraft_wal_fdatasyncs_total", 1}, {"durableraft_wal_records_synced_total", httpWrites + pipeWrites},
		{"durableraft_status_up", 1}, {"durableraft_replica_proposals_total", httpWrites + pipeWrites},
		{"durableraft_server_writes_total", httpWrites + pipeWrites}, {"durableraft_transport_messages_sent_total", 1},
	} {
		if v := value(t, fams, c.name); v < c.min {
			t.Errorf("%s = %v, want at least %v", c.name, v, c.min)
		}
	}
	if v := value(t, fams, "durableraft_term"); v != float64(st.Term) {
		t.Errorf("term %v, status says %d", v, st.Term)
	}
	value(t, fams, "durableraft_elections_started_total") // present (a single-candidate win counts one)
	for _, g := range []string{"durableraft_fenced", "durableraft_wal_failed", "durableraft_holding"} {
		if v := value(t, fams, g); v != 0 && g != "durableraft_holding" {
			t.Errorf("%s = %v on a healthy leader", g, v)
		}
	}
	if v := value(t, fams, "durableraft_fence", "state", raft.OutcomeEligible.String()); v != 1 {
		t.Errorf("fence ELIGIBLE = %v", v)
	}
	for _, o := range fenceOutcomes[1:] {
		if v := value(t, fams, "durableraft_fence", "state", o.String()); v != 0 {
			t.Errorf("fence %s = %v", o, v)
		}
	}
	for id := range tc.dirs {
		if id == lead {
			continue
		}
		f := itoa(id)
		for _, name := range []string{"durableraft_follower_durable_index", "durableraft_follower_match_index", "durableraft_follower_sent_index"} {
			if v := value(t, fams, name, "follower", f); v < 1 || v > float64(st.Last) {
				t.Errorf("%s{follower=%s} = %v (leader's last %d)", name, f, v, st.Last)
			}
		}
		value(t, fams, "durableraft_follower_inflight", "follower", f)
	}
	for _, file := range []string{"log", "hardstate"} {
		if n, sum := histCount(t, fams, "durableraft_wal_fdatasync_seconds", "file", file); n == 0 || sum <= 0 {
			t.Errorf("fdatasync{file=%s}: %d observations, sum %v", file, n, sum)
		}
	}
	if n, sum := histCount(t, fams, "durableraft_wal_records_per_fdatasync"); n == 0 || sum < httpWrites+pipeWrites {
		t.Errorf("records per fdatasync: %d observations, sum %v (want at least the %d writes)", n, sum, httpWrites+pipeWrites)
	}
	for _, stage := range stageLabels {
		n, sum := histCount(t, fams, "durableraft_write_stage_seconds", "stage", stage)
		if n < httpWrites+pipeWrites || sum <= 0 {
			t.Errorf("stage %s: %d observations, sum %v; want one per write at least", stage, n, sum)
		}
	}

	// A follower: the same families, its own indexes, no follower series,
	// and the apply stage timed for what it applied.
	var f raft.NodeID = 1
	if f == lead {
		f = 2
	}
	waitFor(t, func() bool {
		return value(t, scrape(t, tc.url(f, "/metrics")), "durableraft_applied_index") >= httpWrites+pipeWrites
	})
	ff := scrape(t, tc.url(f, "/metrics"))
	if v := value(t, ff, "durableraft_is_leader"); v != 0 {
		t.Errorf("follower is_leader %v", v)
	}
	if _, ok := ff["durableraft_follower_durable_index"]; ok {
		t.Errorf("a follower shows follower progress")
	}
	if n, _ := histCount(t, ff, "durableraft_write_stage_seconds", "stage", "apply"); n < httpWrites+pipeWrites {
		t.Errorf("follower's apply stage: %d observations", n)
	}
	if n, _ := histCount(t, ff, "durableraft_write_stage_seconds", "stage", "append"); n != 0 {
		t.Errorf("follower's append stage: %d observations (it proposes nothing)", n)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a bound
	}
}
