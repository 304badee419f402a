package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/durableraft/durableraft/impl/procs"
)

// etcdCluster is three etcd members on 127.0.0.1, each with its data
// directory under dir, with etcd's default settings (fsync on; the
// default snapshot count, heartbeat and election timeout).
type etcdCluster struct {
	members []*child
	clients []string
	leader  string
}

func startEtcd(ctx context.Context, bin, dir string) (*etcdCluster, error) {
	const size = 3
	var cps, pps []int
	for k := 0; k < 2*size; k++ {
		p, err := procs.FreePort()
		if err != nil {
			return nil, err
		}
		if k < size {
			cps = append(cps, p)
		} else {
			pps = append(pps, p)
		}
	}
	var initial []string
	for k := 0; k < size; k++ {
		initial = append(initial, fmt.Sprintf("e%d=http://127.0.0.1:%d", k+1, pps[k]))
	}
	e := &etcdCluster{}
	for k := 0; k < size; k++ {
		name := fmt.Sprintf("e%d", k+1)
		cu, pu := fmt.Sprintf("http://127.0.0.1:%d", cps[k]), fmt.Sprintf("http://127.0.0.1:%d", pps[k])
		c, err := startChild("etcd "+name, filepath.Join(dir, name+".log"), bin,
			"--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", cu, "--advertise-client-urls", cu,
			"--listen-peer-urls", pu, "--initial-advertise-peer-urls", pu,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-token", "raftbench", "--initial-cluster-state", "new",
			"--logger", "zap", "--log-level", "warn")
		if err != nil {
			e.stop()
			return nil, err
		}
		e.members = append(e.members, c)
		e.clients = append(e.clients, fmt.Sprintf("127.0.0.1:%d", cps[k]))
	}
	for k, c := range e.members {
		if err := waitTCP(c, e.clients[k], 20*time.Second); err != nil {
			e.stop()
			return nil, err
		}
	}
	if err := e.findLeader(ctx); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// findLeader waits until a member says it leads and stores its address.
func (e *etcdCluster) findLeader(ctx context.Context) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.clients, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcd client: %w", err)
	}
	defer cli.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, ep := range e.clients {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := cli.Status(sctx, ep)
			cancel()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				e.leader = ep
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(50 * time.Millisecond) // an election under way: nothing to wait on but time
	}
	return fmt.Errorf("etcd: no leader within 20s")
}

func (e *etcdCluster) pids() []int {
	var p []int
	for _, c := range e.members {
		p = append(p, c.pid())
	}
	return p
}

func (e *etcdCluster) stop() {
	for _, c := range e.members {
		c.stop()
	}
}
