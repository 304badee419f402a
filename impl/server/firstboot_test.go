package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestForceNewCluster: guided recovery after the permanent loss of a
// quorum. Two of three members are gone for good; the survivor started
// with --force-new-cluster alone is refused with a statement of what may
// be lost and the confirmation to type; with the wrong confirmation too;
// with the right one it is the only voter, serves what it held and takes
// new writes, and the configuration entry that did it is in its log.
func TestForceNewCluster(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	lead := tc.leader()
	if r := do(t, "PUT", tc.url(lead, "/v1/kv/before"), "v1"); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	survivor := lead
	tc.stopAll()
	base := Config{ID: survivor, DataDir: tc.dirs[survivor], ClientAddr: tc.clients[survivor], PeerAddr: tc.peers[survivor],
		InitialPeers: tc.peers, Logger: testLogger(), TickInterval: testTick}
	b, err := os.ReadFile(filepath.Join(tc.dirs[survivor], clusterFile))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := decodeCluster(b)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s/%d", cl.IDHex, survivor)
	for _, confirm := range []string{"", cl.IDHex + "/9"} {
		cfg := base
		cfg.ForceNewCluster, cfg.ForceNewClusterConfirm = true, confirm
		_, err := Open(cfg)
		if !errors.Is(err, ErrForceNewClusterUnconfirmed) || !strings.Contains(err.Error(), "MAY BE LOST") ||
			!strings.Contains(err.Error(), "--force-new-cluster-confirm "+want) {
			t.Fatalf("confirmation %q: %v", confirm, err)
		}
	}
	tc.edit = func(c *Config) { c.ForceNewCluster, c.ForceNewClusterConfirm = true, want }
	tc.start(survivor)
	if got := tc.leader(); got != survivor {
		t.Fatalf("leader %d, want the survivor %d", got, survivor)
	}
	if g := do(t, "GET", tc.url(survivor, "/v1/kv/before"), ""); g.status != 200 || g.body != "v1" {
		t.Fatalf("GET before: %d %q", g.status, g.body)
	}
	if r := do(t, "PUT", tc.url(survivor, "/v1/kv/after"), "v2"); r.status != 200 {
		t.Fatalf("PUT after the recovery: %d %s", r.status, r.body)
	}
	st, err := tc.nodes[survivor].run.Status(context.Background())
	if err != nil || len(st.Voters) != 1 || st.Voters[0] != survivor {
		t.Fatalf("configuration after the recovery: %v (%v)", st.Voters, err)
	}
	// A restart without the flag keeps the new configuration (it is in the log).
	tc.stop(survivor)
	tc.edit = nil
	tc.start(survivor)
	if got := tc.leader(); got != survivor {
		t.Fatalf("after a restart: leader %d", got)
	}
}
