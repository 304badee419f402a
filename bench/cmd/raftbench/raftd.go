package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/durableraft/durableraft/impl/procs"
)

// raftdCluster is three raftd processes on 127.0.0.1 with their data
// under dir, with raftd's default settings, each serving its profiles on
// a loopback port of its own.
type raftdCluster struct {
	c      *procs.Cluster
	pprof  map[int]string
	leader int
}

func startRaftd(ctx context.Context, bin, dir string, extra []string) (*raftdCluster, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("raftd binary: %w (make build)", err)
	}
	r := &raftdCluster{pprof: map[int]string{}}
	for id := 1; id <= 3; id++ {
		p, err := procs.FreePort()
		if err != nil {
			return nil, err
		}
		r.pprof[id] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	c, err := procs.New(procs.Config{Raftd: bin, Dir: dir, Size: 3,
		Args: func(id int) []string {
			return append([]string{"--pprof", r.pprof[id], "--log-level", "warn"}, extra...)
		}})
	if err != nil {
		return nil, err
	}
	r.c = c
	if err := c.StartAll(); err != nil {
		r.stop()
		return nil, err
	}
	for _, n := range c.Nodes {
		if err := c.WaitUp(ctx, n.ID, 20*time.Second); err != nil {
			r.stop()
			return nil, fmt.Errorf("%w (log: %s)", err, n.LogPath)
		}
	}
	if r.leader, err = c.Leader(ctx, 20*time.Second); err != nil {
		r.stop()
		return nil, err
	}
	for _, n := range c.Nodes {
		st, err := r.status(ctx, n.ID)
		if err != nil {
			r.stop()
			return nil, err
		}
		if t := st.Testing; t.LossyFS || t.CoreBugs != "" || t.ReplicaBugs != "" {
			r.stop()
			return nil, fmt.Errorf("raftd node %d runs with a test switch (%+v): refusing to benchmark it", n.ID, t)
		}
	}
	return r, nil
}

// nodeStatus is the part of /v1/status the benchmark reads.
type nodeStatus struct {
	Role string `json:"role"`
	Last uint64 `json:"last"`
	WAL  struct {
		Syncs   uint64 `json:"syncs"`
		Records uint64 `json:"records_synced"`
	} `json:"wal"`
	Replica map[string]uint64 `json:"replica_stats"`
	Testing struct {
		LossyFS     bool   `json:"lossy_fs"`
		CoreBugs    string `json:"core_bugs"`
		ReplicaBugs string `json:"replica_bugs"`
	} `json:"testing"`
}

func (r *raftdCluster) status(ctx context.Context, id int) (nodeStatus, error) {
	var st nodeStatus
	err := getJSON(ctx, "http://"+r.c.Node(id).ClientAddr+"/v1/status", &st)
	return st, err
}

// counters are each node's WAL counters.
func (r *raftdCluster) counters(ctx context.Context) ([]nodeStatus, error) {
	var out []nodeStatus
	for _, n := range r.c.Nodes {
		st, err := r.status(ctx, n.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (r *raftdCluster) leaderAddr() string { return r.c.Node(r.leader).ClientAddr }

func (r *raftdCluster) endpoints() []string { return r.c.Endpoints() }

func (r *raftdCluster) pids() []int {
	var p []int
	for _, n := range r.c.Nodes {
		p = append(p, n.Pid())
	}
	return p
}

// profile fetches every node's CPU profile over d, then its allocation
// profile, into dir (raftd-<id>-leader-cpu.pprof for the leader,
// raftd-<id>-follower-cpu.pprof for the others).
func (r *raftdCluster) profile(ctx context.Context, d time.Duration, dir string) error {
	errs := make(chan error, len(r.pprof))
	for id, addr := range r.pprof {
		role := "follower"
		if id == r.leader {
			role = "leader"
		}
		name := filepath.Join(dir, fmt.Sprintf("raftd-%d-%s-", id, role))
		go func() {
			err := fetch(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, max(1, int(d.Seconds()))), name+"cpu.pprof")
			if err == nil {
				err = fetch(ctx, "http://"+addr+"/debug/pprof/allocs", name+"allocs.pprof")
			}
			errs <- err
		}()
	}
	var first error
	for range r.pprof {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (r *raftdCluster) stop() {
	if r.c != nil {
		_ = r.c.StopAll()
	}
}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
