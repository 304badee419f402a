package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// histSums are the _sum and _count series of raftd's latency histograms
// (/metrics): the write stages and the WAL's fdatasyncs, keyed by the
// series name with its labels ("durableraft_write_stage_seconds_sum{stage=\"apply\"}").
type histSums map[string]float64

// metricsOf reads node id's /metrics and keeps the histogram sums and
// counts the benchmark reports.
func (r *raftdCluster) metricsOf(ctx context.Context, id int) (histSums, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+r.c.Node(id).ClientAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET /metrics of node %d: HTTP %d", id, resp.StatusCode)
	}
	out := histSums{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "durableraft_write_stage_seconds_") && !strings.HasPrefix(line, "durableraft_wal_fdatasync_seconds_") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok || !(strings.Contains(name, "_sum") || strings.Contains(name, "_count")) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics of node %d: %q: %w", id, line, err)
		}
		out[name] = v
	}
	return out, sc.Err()
}

// metrics reads every node's histogram sums (nil for a raftd without
// /metrics: its stage fields are na).
func (r *raftdCluster) metrics(ctx context.Context) []histSums {
	var out []histSums
	for _, n := range r.c.Nodes {
		h, err := r.metricsOf(ctx, n.ID)
		if err != nil {
			return nil
		}
		out = append(out, h)
	}
	return out
}

// histDelta is after - before, node by node (nil when either is missing).
func histDelta(before, after []histSums) []histSums {
	if len(before) == 0 || len(after) != len(before) {
		return nil
	}
	out := make([]histSums, len(after))
	for k := range after {
		out[k] = histSums{}
		for name, v := range after[k] {
			out[k][name] = v - before[k][name]
		}
	}
	return out
}

// plus adds two deltas (rounds of the same system).
func (h histSums) plus(o histSums) histSums {
	out := histSums{}
	for name, v := range h {
		out[name] = v + o[name]
	}
	return out
}

// meanMs is the mean, in ms, of the observations of histogram series
// (name and labels without the _sum/_count suffix) in a delta.
func meanMs(d histSums, name, labels string) (float64, bool) {
	sum, cnt := d[name+"_sum"+labels], d[name+"_count"+labels]
	if cnt <= 0 {
		return 0, false
	}
	return sum / cnt * 1000, true
}

// stageFields formats the leader's mean latency per write stage and each
// node's mean fdatasync latency of its log, in ms, from histogram deltas.
func stageFields(after []histSums, leader int) string {
	if len(after) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" stage_ms=")
	for k, s := range []string{"append", "leader_fdatasync", "majority_durable", "apply", "reply"} {
		if k > 0 {
			b.WriteByte(',')
		}
		v, ok := meanMs(after[leader], "durableraft_write_stage_seconds", `{stage="`+s+`"}`)
		if ok {
			fmt.Fprintf(&b, "%s:%.3f", s, v)
		} else {
			fmt.Fprintf(&b, "%s:na", s)
		}
	}
	b.WriteString(" fdatasync_ms=")
	for k := range after {
		if k > 0 {
			b.WriteByte(',')
		}
		if v, ok := meanMs(after[k], "durableraft_wal_fdatasync_seconds", `{file="log"}`); ok {
			fmt.Fprintf(&b, "%.3f", v)
		} else {
			b.WriteString("na")
		}
	}
	return b.String()
}
