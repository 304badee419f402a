package server

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// metrics is the node's Prometheus registry (/metrics, docs/raftd.md has
// the list): histograms observed as things happen (fdatasync latency,
// records per group commit, write latency by stage), and the state and
// counters read from the replica's status at each scrape (collector).
type metrics struct {
	reg     *prometheus.Registry
	syncs   *prometheus.HistogramVec // by file: log, hardstate
	flushes prometheus.Histogram
	stages  *prometheus.HistogramVec // by stage
	changes *prometheus.CounterVec   // membership changes asked of this leader, by op and outcome
	// stage is the observer of each stage, looked up once.
	stage []prometheus.Observer
}

// stageReply is the server's own stage after the replica's: from the
// proposal's answer to the response written to the client.
var stageReply = replica.Stage(len(stageLabels) - 1)

var stageLabels = func() []string {
	var out []string
	for _, s := range replica.AllStages() {
		out = append(out, s.String())
	}
	return append(out, "reply")
}()

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.syncs = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "durableraft_wal_fdatasync_seconds",
		Help:    "Latency of each fdatasync of the WAL's files (file: log segments or the hard state); its count is the number of fdatasyncs.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16)}, []string{"file"})
	m.flushes = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "durableraft_wal_records_per_fdatasync",
		Help:    "Records made durable by each group-commit cycle of the WAL (one fdatasync of the log; 0 for a hard state or seal alone).",
		Buckets: []float64{0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096}})
	m.stages = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "durableraft_write_stage_seconds",
		Help: "Write latency by stage: append (request to WAL append), leader_fdatasync (to the leader's own fdatasync), " +
			"majority_durable (to commit: durable on a majority), apply (the state machine), reply (to the response written).",
		Buckets: prometheus.ExponentialBuckets(10e-6, 2, 20)}, []string{"stage"})
	for _, l := range stageLabels {
		m.stage = append(m.stage, m.stages.WithLabelValues(l))
	}
	m.changes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "durableraft_membership_changes_total",
		Help: "Membership changes (POST /v1/members) this node handled as the leader, by op (add, promote, remove) and outcome (applied, or the error code)."},
		[]string{"op", "outcome"})
	for _, f := range []string{"log", "hardstate"} {
		m.syncs.WithLabelValues(f) // every series present from the start
	}
	m.reg.MustRegister(m.syncs, m.flushes, m.stages, m.changes)
	return m
}

// observeStage is replica.Config.ObserveStage (and the server's reply).
func (m *metrics) observeStage(s replica.Stage, d time.Duration) { m.stage[s].Observe(d.Seconds()) }

// handleMetrics serves /metrics in the Prometheus text format.
func (n *Node) metricsHandler() http.Handler {
	return promhttp.HandlerFor(n.metrics.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{n}, ErrorHandling: promhttp.ContinueOnError})
}

type slogPrinter struct{ n *Node }

func (p slogPrinter) Println(v ...any) { p.n.log.Warn("server: /metrics", "err", v) }

// timedFS wraps the WAL's file system to time every fdatasync.
type timedFS struct {
	vfs.FS
	m *metrics
}

func (t timedFS) Create(name string) (vfs.File, error) { return t.wrap(name)(t.FS.Create(name)) }
func (t timedFS) Open(name string) (vfs.File, error)   { return t.wrap(name)(t.FS.Open(name)) }

func (t timedFS) wrap(name string) func(vfs.File, error) (vfs.File, error) {
	return func(f vfs.File, err error) (vfs.File, error) {
		if err != nil {
			return nil, err
		}
		return timedFile{File: f, obs: t.m.syncs.WithLabelValues(syncFile(name))}, nil
	}
}

// timedFile times its Sync.
type timedFile struct {
	vfs.File
	obs prometheus.Observer
}

func (f timedFile) Sync() error {
	start := time.Now()
	err := f.File.Sync()
	f.obs.Observe(time.Since(start).Seconds())
	return err
}

// stateCollector reads the node's status at each scrape: the protocol's
// indexes and state, each follower's progress, and every counter.
type stateCollector struct{ n *Node }

func (c stateCollector) Describe(chan<- *prometheus.Desc) {} // unchecked: the counters are the status's

// gauge and counter build a constant metric of the scrape.
func gauge(name, help string, v float64, labels ...string) prometheus.Metric {
	return constMetric(prometheus.GaugeValue, name, help, v, labels...)
}

func counter(name, help string, v uint64, labels ...string) prometheus.Metric {
	return constMetric(prometheus.CounterValue, name, help, float64(v), labels...)
}

// constMetric: labels are name, value pairs.
func constMetric(t prometheus.ValueType, name, help string, v float64, labels ...string) prometheus.Metric {
	var names, values []string
	for k := 0; k+1 < len(labels); k += 2 {
		names, values = append(names, labels[k]), append(values, labels[k+1])
	}
	return prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, names, nil), t, v, values...)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := c.n.status(ctx)
	if err != nil {
		ch <- gauge("durableraft_status_up", "1 when the replica answered the scrape's status request.", 0)
		return
	}
	ch <- gauge("durableraft_status_up", "1 when the replica answered the scrape's status request.", 1)
	for _, g := range []struct {
		name, help string
		v          uint64
	}{
		{"durableraft_term", "The current term (durable hard state).", st.Term},
		{"durableraft_commit_index", "The commit index: durable on a majority.", st.Commit},
		{"durableraft_durable_index", "This node's durable index: fdatasync'd in its WAL.", st.Durable},
		{"durableraft_applied_index", "The index the KV store has applied.", st.Applied},
		{"durableraft_last_index", "The last index in this node's log (appended, maybe not durable).", st.Last},
		{"durableraft_learned_commit_index", "The highest commit index this node learned (durable): the cluster's high-water mark it knows, which the promotion fence compares the durable tip to.", st.LearnedCommit},
		{"durableraft_leader_id", "The leader this node knows (0: none).", st.Leader},
	} {
		ch <- gauge(g.name, g.help, float64(g.v))
	}
	ch <- gauge("durableraft_is_leader", "1 when this node leads.", b2f(st.Role == raft.RoleLeader.String()))
	c.collectFence(ch, st)
	c.collectFollowers(ch, st)
	c.collectCounters(ch, st)
}

// fenceOutcomes are the fence states, each a series (1 for the current).
var fenceOutcomes = []raft.Outcome{raft.OutcomeEligible, raft.OutcomeFenced, raft.OutcomePermanentFence, raft.OutcomeHardStateLost}

func (c stateCollector) collectFence(ch chan<- prometheus.Metric, st StatusBody) {
	for _, o := range fenceOutcomes {
		ch <- gauge("durableraft_fence", "The promotion fence's state: 1 for the current one (ELIGIBLE: may campaign and lead).",
			b2f(st.Fence == o.String()), "state", o.String())
	}
	ch <- gauge("durableraft_fenced", "1 when this node is fenced (any state but ELIGIBLE): no campaign, no promotion.", b2f(st.Fence != raft.OutcomeEligible.String()))
	ch <- gauge("durableraft_wal_failed", "1 when the WAL failed (an fdatasync error): the node acknowledges nothing until restarted.", b2f(st.WALFailed))
	ch <- gauge("durableraft_state_diverged", "1 when the state check found this node's KV state different from a majority's: fenced from voting and serving.", b2f(st.StateCheck.Diverged))
	ch <- gauge("durableraft_state_check_index", "The last index the state check decided (match or diverged).", float64(st.StateCheck.LastIndex))
	for _, o := range []checkOutcome{checkMatch, checkOdd, checkInconclusive} {
		ch <- counter("durableraft_state_checks_total", "State check rounds by outcome (inconclusive: no majority of equal hashes; a failed report never counts as a match).",
			c.n.check.rounds[o].Load(), "outcome", o.String())
	}
	ch <- gauge("durableraft_holding", "1 while the replica holds inputs for the disk.", b2f(st.Holding))
}

func (c stateCollector) collectFollowers(ch chan<- prometheus.Metric, st StatusBody) {
	ids := make([]raft.NodeID, 0, len(st.Progress))
	for id := range st.Progress {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		pr := st.Progress[id]
		f := strconv.FormatUint(uint64(id), 10)
		ch <- gauge("durableraft_follower_durable_index", "(leader only) The follower's durable index as the leader knows it: its match index, since followers acknowledge only what they fdatasync'd.",
			float64(pr.Match), "follower", f)
		ch <- gauge("durableraft_follower_match_index", "(leader only) The follower's match index (the core's; equal to its acknowledged durable index).",
			float64(pr.Match), "follower", f)
		ch <- gauge("durableraft_follower_sent_index", "(leader only) The last index sent to the follower (next-1), not yet known durable there.",
			float64(pr.Next-1), "follower", f)
		ch <- gauge("durableraft_follower_inflight", "(leader only) AppendEntries in flight to the follower.", float64(pr.Inflight), "follower", f)
	}
}

func (c stateCollector) collectCounters(ch chan<- prometheus.Metric, st StatusBody) {
	rs := c.n.rep.Stats()
	ch <- counter("durableraft_elections_started_total", "Elections this node started (became a candidate).", rs.Campaigns.Load())
	ch <- counter("durableraft_elections_won_total", "Elections this node won (became the leader).", rs.LeaderElections.Load())
	ch <- counter("durableraft_wal_fdatasyncs_total", "fdatasyncs of the WAL's segment files (the WAL's own count).", st.WAL.Syncs)
	ch <- counter("durableraft_wal_records_synced_total", "Records the WAL made durable.", st.WAL.Records)
	emit := func(prefix string, m map[string]uint64) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if prefix == "replica" && k == "applied" {
				continue // a gauge: durableraft_applied_index
			}
			ch <- counter("durableraft_"+prefix+"_"+k+"_total", "The "+prefix+"'s "+k+" counter (as in /v1/status).", m[k])
		}
	}
	emit("replica", st.Replica)
	emit("server", st.Server)
	var tm map[string]uint64
	if b, err := json.Marshal(st.Transport); err == nil && json.Unmarshal(b, &tm) == nil {
		emit("transport", tm)
	}
}

// syncFile names a WAL file for the fdatasync histogram.
func syncFile(name string) string {
	if strings.HasPrefix(filepath.Base(name), "hardstate") { // and its temporary file at creation
		return "hardstate"
	}
	return "log"
}
