package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/durableraft/durableraft/impl/client"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/durableraft/durableraft/impl/procs"
)

// order is the order systems run in at each client count.
var order = []string{"pipelined", "pipelined-b", "http", "noop", "etcd"}

type bench struct {
	o        *options
	out, log io.Writer
	raftd    *raftdCluster
	raftdB   *raftdCluster // the B side of an A/B run (-raftd-b), nil without
	etcd     *etcdCluster
	noop     *child
	noopAddr string
	value    []byte
}

// measured is one system's figures at one client count.
type measured struct {
	result
	cpu, clientCPU time.Duration
	syncs, records []uint64   // per raftd node, per write below
	hists          []histSums // per raftd node: stage and fdatasync histograms over the window
	leader         int        // index of the leader in hists
	entries        uint64     // log entries the leader appended
	sent, batches  uint64     // messages the leader sent, proposal batches it took
}

func (b *bench) run(ctx context.Context) error {
	b.value = bytes.Repeat([]byte("v"), b.o.valueBytes)
	if err := b.start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "raftbench: %d-byte values to distinct keys, %v measured per system %d time(s) in turn (each after %v warm-up), data on %s\n",
		b.o.valueBytes, b.o.duration, b.o.rounds, b.o.warmup, b.o.dir)
	for _, c := range b.o.clients {
		got := map[string]measured{}
		for round := 1; round <= b.o.rounds; round++ {
			for _, sys := range order {
				if !b.o.systems[sys] {
					continue
				}
				last := c == b.o.clients[len(b.o.clients)-1] && round == b.o.rounds
				m, err := b.measure(ctx, sys, c, round, last)
				if err != nil {
					return fmt.Errorf("%s at %d clients: %w", sys, c, err)
				}
				got[sys] = got[sys].merge(m)
			}
		}
		for _, sys := range order {
			if m, ok := got[sys]; ok {
				b.printOne(sys, c, m)
			}
		}
		fmt.Fprintln(b.out, summary(c, got))
	}
	return nil
}

// merge adds the figures of another round of the same system.
func (m measured) merge(o measured) measured {
	if m.elapsed == 0 {
		return o
	}
	m.writes += o.writes
	m.failed += o.failed
	m.elapsed += o.elapsed
	m.lat = append(m.lat, o.lat...)
	slices.Sort(m.lat)
	if m.firstErr == nil {
		m.firstErr = o.firstErr
	}
	m.cpu += o.cpu
	m.clientCPU += o.clientCPU
	m.entries += o.entries
	m.sent += o.sent
	m.batches += o.batches
	for k := range m.syncs {
		m.syncs[k] += o.syncs[k]
		m.records[k] += o.records[k]
	}
	if len(m.hists) == len(o.hists) {
		for k := range m.hists {
			m.hists[k] = m.hists[k].plus(o.hists[k])
		}
	} else {
		m.hists = nil
	}
	return m
}

// clusterOf is the raftd cluster a system measures (nil for noop and etcd).
func (b *bench) clusterOf(sys string) *raftdCluster {
	switch sys {
	case "pipelined", "http":
		return b.raftd
	case "pipelined-b":
		return b.raftdB
	}
	return nil
}

func (b *bench) start(ctx context.Context) error {
	if b.o.systems["pipelined"] || b.o.systems["http"] {
		err := retryPorts(func(try int) (err error) {
			b.raftd, err = startRaftd(ctx, b.o.raftd, filepath.Join(b.o.dir, fmt.Sprintf("raftd-%d", try)), b.o.raftdArgs)
			return err
		})
		if err != nil {
			return fmt.Errorf("raftd: %w", err)
		}
	}
	if b.o.systems["pipelined-b"] {
		err := retryPorts(func(try int) (err error) {
			b.raftdB, err = startRaftd(ctx, b.o.raftdB, filepath.Join(b.o.dir, fmt.Sprintf("raftd-b-%d", try)), b.o.raftdBArgs)
			return err
		})
		if err != nil {
			return fmt.Errorf("raftd B: %w", err)
		}
	}
	if b.o.systems["noop"] {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		p, err := procs.FreePort()
		if err != nil {
			return err
		}
		b.noopAddr = fmt.Sprintf("127.0.0.1:%d", p)
		if b.noop, err = startChild("noop server", filepath.Join(b.o.dir, "noop.log"), exe, "noop-serve", b.noopAddr); err != nil {
			return err
		}
		if err := waitTCP(b.noop, b.noopAddr, 10*time.Second); err != nil {
			return err
		}
	}
	if b.o.systems["etcd"] {
		err := retryPorts(func(try int) (err error) {
			dir := filepath.Join(b.o.dir, fmt.Sprintf("etcd-%d", try))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			b.etcd, err = startEtcd(ctx, b.o.etcd, dir)
			return err
		})
		if err != nil {
			return fmt.Errorf("etcd: %w", err)
		}
	}
	return nil
}

// retryPorts starts a cluster up to three times, each in a fresh
// directory: its ports are picked free and released before the members
// bind them, and another process on the machine may take one meanwhile.
func retryPorts(start func(try int) error) error {
	var err error
	for try := 1; try <= 3; try++ {
		if err = start(try); err == nil {
			return nil
		}
	}
	return err
}

func (b *bench) stopAll() {
	if b.raftd != nil {
		b.raftd.stop()
	}
	if b.raftdB != nil {
		b.raftdB.stop()
	}
	if b.noop != nil {
		b.noop.stop()
	}
	if b.etcd != nil {
		b.etcd.stop()
	}
}

// measure runs one system at clients writers.
func (b *bench) measure(ctx context.Context, sys string, clients, round int, last bool) (measured, error) {
	do, closeFn, pids, err := b.driver(sys, clients)
	if err != nil {
		return measured{}, err
	}
	defer closeFn()
	cl := b.clusterOf(sys)
	raftdRun := cl != nil
	profDone := make(chan error, 1)
	profile := sys == b.o.profileSystem && last && b.o.profileDir != ""
	var before, after []nodeStatus
	var histBefore, histAfter []histSums
	var errBefore, errAfter error
	var cpu0, cpu1, self0, self1 time.Duration
	var selfProf *os.File // the load generator's own CPU profile
	mark := func(end bool) {
		if !end {
			cpu0, self0 = cpuOf(pids), selfCPU()
			if raftdRun {
				before, errBefore = cl.counters(ctx)
				histBefore = cl.metrics(ctx)
			}
			if profile {
				go func() { profDone <- cl.profile(ctx, b.o.duration, b.o.profileDir) }()
				if f, err := os.Create(filepath.Join(b.o.profileDir, "raftbench-cpu.pprof")); err == nil {
					if pprof.StartCPUProfile(f) == nil {
						selfProf = f
					} else {
						f.Close()
					}
				}
			}
			return
		}
		cpu1, self1 = cpuOf(pids), selfCPU()
		if selfProf != nil {
			pprof.StopCPUProfile()
			selfProf.Close()
		}
		if raftdRun {
			after, errAfter = cl.counters(context.Background())
			histAfter = cl.metrics(context.Background())
		}
	}
	if !profile {
		profDone <- nil
	}
	prefix := fmt.Sprintf("%s-%d-r%d", sys, clients, round)
	r := drive(ctx, clients, prefix, b.o.warmup, b.o.duration, do, mark)
	m := measured{result: r, cpu: cpu1 - cpu0, clientCPU: self1 - self0}
	if ctx.Err() != nil {
		return m, ctx.Err()
	}
	if err := <-profDone; err != nil {
		return m, fmt.Errorf("profile: %w", err)
	}
	if r.writes == 0 {
		return m, fmt.Errorf("no write acknowledged (%d failed; first: %v)", r.failed, r.firstErr)
	}
	if err := cmpErr(errBefore, errAfter); err != nil {
		return m, err
	}
	if raftdRun {
		lead := cl.leader - 1
		m.entries = after[lead].Last - before[lead].Last
		m.sent = after[lead].Replica["messages_sent"] - before[lead].Replica["messages_sent"]
		m.batches = after[lead].Replica["proposal_batches"] - before[lead].Replica["proposal_batches"]
		m.hists, m.leader = histDelta(histBefore, histAfter), lead
		for k := range after {
			m.syncs = append(m.syncs, after[k].WAL.Syncs-before[k].WAL.Syncs)
			m.records = append(m.records, after[k].WAL.Records-before[k].WAL.Records)
		}
	}
	return m, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// driver returns the write of one system, what closes its clients, and the
// server processes whose CPU time is counted.
func (b *bench) driver(sys string, clients int) (op, func(), []int, error) {
	conns := min(clients, b.o.conns)
	switch sys {
	case "pipelined", "pipelined-b":
		cl := b.clusterOf(sys)
		var cs []*client.Client
		for k := 0; k < conns; k++ {
			c, err := client.New(client.Config{Endpoints: append([]string{cl.leaderAddr()}, cl.endpoints()...)})
			if err != nil {
				return nil, nil, nil, err
			}
			cs = append(cs, c)
		}
		closeFn := func() {
			for _, c := range cs {
				_ = c.Close()
			}
		}
		return func(ctx context.Context, w int, key []byte) error {
			_, err := cs[w%len(cs)].Put(ctx, key, b.value)
			return err
		}, closeFn, cl.pids(), nil
	case "http":
		return b.httpDriver(b.raftd.leaderAddr(), clients), func() {}, b.raftd.pids(), nil
	case "noop":
		return b.httpDriver(b.noopAddr, clients), func() {}, []int{b.noop.pid()}, nil
	case "etcd":
		var cs []*clientv3.Client
		for k := 0; k < conns; k++ {
			c, err := clientv3.New(clientv3.Config{Endpoints: []string{b.etcd.leader}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				return nil, nil, nil, err
			}
			cs = append(cs, c)
		}
		closeFn := func() {
			for _, c := range cs {
				_ = c.Close()
			}
		}
		value := string(b.value)
		return func(ctx context.Context, w int, key []byte) error {
			_, err := cs[w%len(cs)].Put(ctx, string(key), value)
			return err
		}, closeFn, b.etcd.pids(), nil
	}
	return nil, nil, nil, fmt.Errorf("unknown system %q", sys)
}

// httpDriver PUTs to addr over keep-alive connections, one per client.
func (b *bench) httpDriver(addr string, clients int) op {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients,
		IdleConnTimeout: time.Minute}}
	base := "http://" + addr + "/v1/kv/"
	return func(ctx context.Context, w int, key []byte) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+string(key), bytes.NewReader(b.value))
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New("HTTP " + resp.Status)
		}
		return nil
	}
}

func (b *bench) printOne(sys string, clients int, m measured) {
	var extra strings.Builder
	if len(m.syncs) > 0 {
		w := float64(m.writes)
		perBatch := "na" // a raftd without the counter
		if m.batches > 0 {
			perBatch = fmt.Sprintf("%.1f", w/float64(m.batches))
		}
		fmt.Fprintf(&extra, " entries_per_write=%.2f writes_per_proposal_batch=%s leader_msgs_per_write=%.3f fdatasyncs_per_write=",
			float64(m.entries)/w, perBatch, float64(m.sent)/w)
		for k, s := range m.syncs {
			if k > 0 {
				extra.WriteByte(',')
			}
			fmt.Fprintf(&extra, "%.3f", float64(s)/float64(m.writes))
		}
		fmt.Fprintf(&extra, " records_per_write=")
		for k, s := range m.records {
			if k > 0 {
				extra.WriteByte(',')
			}
			fmt.Fprintf(&extra, "%.2f", float64(s)/float64(m.writes))
		}
		extra.WriteString(stageFields(m.hists, m.leader))
	}
	fmt.Fprintf(b.out, "  %-9s clients=%d writes_per_s=%.0f p50=%s p99=%s p999=%s failed=%d server_cpu_us_per_write=%.1f client_cpu_us_per_write=%.1f%s\n",
		sys, clients, m.rate(), ms(m.pct(0.50)), ms(m.pct(0.99)), ms(m.pct(0.999)), m.failed,
		perWrite(m.cpu, m.writes), perWrite(m.clientCPU, m.writes), extra.String())
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func perWrite(d time.Duration, writes uint64) float64 {
	if writes == 0 {
		return 0
	}
	return float64(d) / float64(time.Microsecond) / float64(writes)
}

// summary is the one parseable line of a client count: writes/s of each
// system (na when not measured) and the ratios, raftd over the other.
func summary(clients int, got map[string]measured) string {
	rate := func(s string) string {
		if m, ok := got[s]; ok {
			return fmt.Sprintf("%.0f", m.rate())
		}
		return "na"
	}
	ratio := func(a, b float64, okA, okB bool) string {
		if !okA || !okB || b == 0 {
			return "na"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	p, okP := got["pipelined"]
	pb, okB := got["pipelined-b"]
	h, okH := got["http"]
	n, okN := got["noop"]
	e, okE := got["etcd"]
	line := fmt.Sprintf("clients=%d raftd_http=%s raftd_pipelined=%s etcd=%s noop_http=%s http_over_noop=%s pipelined_over_etcd=%s p99_pipelined_over_etcd=%s http_over_etcd=%s",
		clients, rate("http"), rate("pipelined"), rate("etcd"), rate("noop"),
		ratio(h.rate(), n.rate(), okH, okN), ratio(p.rate(), e.rate(), okP, okE),
		ratio(float64(p.pct(0.99)), float64(e.pct(0.99)), okP, okE), ratio(h.rate(), e.rate(), okH, okE))
	if okB {
		line += fmt.Sprintf(" raftd_pipelined_b=%s b_over_a=%s p50_b_over_a=%s p99_b_over_a=%s b_over_etcd=%s", rate("pipelined-b"),
			ratio(pb.rate(), p.rate(), okB, okP), ratio(float64(pb.pct(0.5)), float64(p.pct(0.5)), okB, okP),
			ratio(float64(pb.pct(0.99)), float64(p.pct(0.99)), okB, okP), ratio(pb.rate(), e.rate(), okB, okE))
	}
	return line
}
