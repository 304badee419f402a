package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/tlsauth"
)

// TestDecideState: the decision table of a round. A failed or missing
// report never counts as a match: without a majority of equal hashes
// nothing is decided.
func TestDecideState(t *testing.T) {
	ok := func(id raft.NodeID, h uint64) hashReport { return hashReport{id: id, hash: h, ok: true} }
	failed := func(id raft.NodeID) hashReport { return hashReport{id: id, err: "timeout"} }
	for _, c := range []struct {
		name     string
		own      uint64
		reports  []hashReport
		members  int
		want     checkOutcome
		majority uint64
		odd      []raft.NodeID
	}{
		{"all equal", 7, []hashReport{ok(2, 7), ok(3, 7)}, 3, checkMatch, 7, nil},
		{"one peer equal, one failed", 7, []hashReport{ok(2, 7), failed(3)}, 3, checkMatch, 7, nil},
		{"both failed: never a match", 7, []hashReport{failed(2), failed(3)}, 3, checkInconclusive, 0, nil},
		{"no reports at all", 7, nil, 3, checkInconclusive, 0, nil},
		{"the others agree on another hash: I diverged", 7, []hashReport{ok(2, 9), ok(3, 9)}, 3, checkOdd, 9, nil},
		{"one other differs: it is odd", 7, []hashReport{ok(2, 7), ok(3, 9)}, 3, checkMatch, 7, []raft.NodeID{3}},
		{"one differs, one failed: no majority", 7, []hashReport{ok(2, 9), failed(3)}, 3, checkInconclusive, 0, nil},
		{"three different", 7, []hashReport{ok(2, 8), ok(3, 9)}, 3, checkInconclusive, 0, nil},
		{"five: two agree with me, two failed", 7, []hashReport{ok(2, 7), ok(3, 7), failed(4), failed(5)}, 5, checkMatch, 7, nil},
		{"five: only one agrees, the rest failed", 7, []hashReport{ok(2, 7), failed(3), failed(4), failed(5)}, 5, checkInconclusive, 0, nil},
		{"five: three others agree on another", 7, []hashReport{ok(2, 9), ok(3, 9), ok(4, 9), failed(5)}, 5, checkOdd, 9, nil},
	} {
		got, majority, odd := decideState(c.own, c.reports, c.members)
		slices.Sort(odd)
		if got != c.want || majority != c.majority || !slices.Equal(odd, c.odd) {
			t.Errorf("%s: %v majority %d odd %v, want %v %d %v", c.name, got, majority, odd, c.want, c.majority, c.odd)
		}
	}
}

// TestStateCheckFencesDivergent: node 3's recorded state hashes differ
// from index 20 on (a planted divergence). The check fences it from
// voting and serving, loudly (log, status, /readyz, /metrics); nodes 1
// and 2 match and name node 3 in their logs; node 3 refuses to campaign.
func TestStateCheckFencesDivergent(t *testing.T) {
	logs := newLogCapture()
	tc := newTestCluster(t, 3, func(c *Config) {
		c.Logger, c.StateCheckEvery, c.StateCheckInterval = logs.logger(c.ID), 10, 20*time.Millisecond
		if c.ID == 3 {
			c.TestingDivergeAt = 20
		}
	})
	lead := tc.leader()
	for k := 0; k < 40; k++ {
		if r := do(t, "PUT", tc.url(lead, "/v1/kv/k"), "v"); r.status != 200 {
			lead = tc.leader() // node 3 may have led, and stepped down when fenced
			k--
			continue
		}
	}
	status := func(id raft.NodeID) StatusBody {
		var st StatusBody
		if err := json.Unmarshal([]byte(do(t, "GET", tc.url(id, "/v1/status"), "").body), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	waitFor(t, func() bool { return status(3).StateCheck.Diverged })
	st3 := status(3)
	if !strings.Contains(st3.NotServing, "STATE DIVERGED") || st3.Role == "Leader" {
		t.Fatalf("node 3: not_serving %q role %s", st3.NotServing, st3.Role)
	}
	if r := do(t, "GET", tc.url(3, "/readyz"), ""); r.status != 503 || !strings.Contains(r.body, "fenced") {
		t.Fatalf("node 3 /readyz: %d %s", r.status, r.body)
	}
	if r := do(t, "GET", tc.url(3, "/v1/kv/k?stale=true"), ""); r.status != 503 || !strings.Contains(r.body, "diverged") {
		t.Fatalf("node 3 served a read: %d %s", r.status, r.body)
	}
	if r := do(t, "PUT", tc.url(3, "/v1/kv/x"), "v"); r.status != 503 {
		t.Fatalf("node 3 took a write: %d %s", r.status, r.body)
	}
	if v := value(t, scrape(t, tc.url(3, "/metrics")), "durableraft_state_diverged"); v != 1 {
		t.Fatalf("node 3 state_diverged %v", v)
	}
	line := logs.one(t, 3, "server: STATE DIVERGED")
	if line["hash"] == line["majority_hash"] {
		t.Fatalf("the divergence line %v", line)
	}
	logs.one(t, 3, "replica: FENCE SET: the state check")
	if err := tc.nodes[3].run.Submit(replica.Event{Kind: replica.EventCampaign}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(logs.lines(t, 3, "replica: campaign refused")) == 1 })
	for _, id := range []raft.NodeID{1, 2} {
		st := status(id)
		if st.StateCheck.Diverged || st.StateCheck.Matches == 0 {
			t.Fatalf("node %d: %+v", id, st.StateCheck)
		}
		waitFor(t, func() bool {
			for _, l := range logs.lines(t, id, "server: STATE CHECK: a member's state differs") {
				if num(t, l, "member") == 3 {
					return true
				}
			}
			return false
		})
	}
	// The cluster goes on with nodes 1 and 2.
	lead = tc.leader()
	if lead == 3 {
		t.Fatal("the fenced node leads")
	}
	if r := do(t, "PUT", tc.url(lead, "/v1/kv/after"), "v"); r.status != 200 {
		t.Fatalf("a write after the fence: %d %s", r.status, r.body)
	}
}

// TestStateCheckAsksAMissingMemberAgain: node 3 is down while nodes 1 and
// 2 decide the last checkpoint (a match, 3's report missing) and no write
// follows. Node 3 comes back with a diverged state (planted from index 20
// on); nodes 1 and 2 ask it again for the decided index and name it. CI
// once saw nodes 1 and 2 decide every round before the lagging odd
// member had its hash, so they never named it.
func TestStateCheckAsksAMissingMemberAgain(t *testing.T) {
	logs := newLogCapture()
	tc := newTestCluster(t, 3, func(c *Config) {
		c.Logger, c.StateCheckEvery, c.StateCheckInterval = logs.logger(c.ID), 10, 20*time.Millisecond
		if c.ID == 3 {
			c.TestingDivergeAt = 20
		}
	})
	lead := tc.leader()
	if lead == 3 {
		if r := do(t, "POST", tc.url(3, "/v1/transfer"), `{"to":1}`); r.status != 200 {
			t.Fatalf("transfer to 1: %d %s", r.status, r.body)
		}
		waitFor(t, func() bool { return tc.leader() != 3 })
		lead = tc.leader()
	}
	tc.stop(3)
	for k := 0; k < 40; k++ {
		if r := do(t, "PUT", tc.url(lead, "/v1/kv/k"), "v"); r.status != 200 {
			t.Fatalf("put %d: %d %s", k, r.status, r.body)
		}
	}
	last := tc.nodes[lead].sm.lastCheckpoint().index
	for _, id := range []raft.NodeID{1, 2} {
		waitFor(t, func() bool { return statusOf(t, tc, id).StateCheck.LastIndex == last })
	}
	tc.start(3)
	for _, id := range []raft.NodeID{1, 2} {
		waitFor(t, func() bool {
			for _, l := range logs.lines(t, id, "server: STATE CHECK: a member's state differs") {
				if num(t, l, "member") == 3 && num(t, l, "index") == last {
					return true
				}
			}
			return false
		})
	}
}

// TestStateCheckMissingReportNoMatch: node 2's hashes diverge and node 3
// is down: node 1 and node 2 each have one report that differs and one
// missing; neither counts the missing one as a match, neither is fenced,
// and both count the rounds inconclusive.
func TestStateCheckMissingReportNoMatch(t *testing.T) {
	tc := newTestCluster(t, 3, func(c *Config) {
		c.StateCheckEvery, c.StateCheckInterval = 10, 20*time.Millisecond
		if c.ID == 2 {
			c.TestingDivergeAt = 1
		}
	})
	lead := tc.leader()
	for k := 0; k < 5; k++ {
		if r := do(t, "PUT", tc.url(lead, "/v1/kv/k"), "v"); r.status != 200 {
			t.Fatalf("put: %d", r.status)
		}
	}
	tc.stop(3)
	waitFor(t, func() bool {
		for k := 0; k < 10; k++ {
			do(t, "PUT", tc.url(tc.leader(), "/v1/kv/k"), "v")
		}
		return tc.nodes[1].stateCheckStatus().Inconclusive > 0 && tc.nodes[2].stateCheckStatus().Inconclusive > 0
	})
	for _, id := range []raft.NodeID{1, 2} {
		if s := tc.nodes[id].stateCheckStatus(); s.Diverged || s.Matches != 0 {
			t.Fatalf("node %d with one differing and one missing report: %+v", id, s)
		}
	}
}

// TestStateCheckTLS: with mutual TLS the members' hash requests pass the
// gate (as a member forwarding a reader's request): every member matches,
// and no node logs a refusal.
func TestStateCheckTLS(t *testing.T) {
	tc := newTLSCluster(t, 3, func(c *Config) { c.StateCheckEvery, c.StateCheckInterval = 5, 20*time.Millisecond })
	lead := tc.leader()
	w := httpsClient(tc.client("app", tlsauth.RoleWrite), false)
	for k := 0; k < 12; k++ {
		if r := tc.eventually(w, "PUT", lead, "/v1/kv/k", "v"); r.status != 200 {
			t.Fatalf("put: %d %s", r.status, r.body)
		}
	}
	waitFor(t, func() bool {
		for id := raft.NodeID(1); id <= 3; id++ {
			if tc.nodes[id].stateCheckStatus().Matches == 0 {
				return false
			}
		}
		return true
	})
	for id := raft.NodeID(1); id <= 3; id++ {
		if n := tc.logs[id].count("request refused"); n != 0 {
			t.Fatalf("node %d refused %d requests", id, n)
		}
	}
}
