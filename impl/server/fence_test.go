package server

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/trace"
)

// TestTruncatedBootsFenced: a node whose log was damaged inside its durable
// prefix recovers TRUNCATED, boots fenced, and says so in /v1/status and
// /readyz (503 fenced) while no leader can repair it; it does not exit.
// Once the others are back, it catches up, the fence releases, and it
// serves again.
func TestTruncatedBootsFenced(t *testing.T) {
	logs := newLogCapture()
	// The rule before marked votes (truncated-withholds-vote): with marked
	// votes a TRUNCATED member is fenced only when behind the commit it
	// learned (boot rows 3, 4), and whether node 3's learned commit was
	// durable before the stop is a matter of timing (under -race it is
	// often not: row 3b, ELIGIBLE). This test is about the fence's reports.
	tc := newTestCluster(t, 3, func(c *Config) {
		c.Logger, c.TestingCoreBugs = logs.logger(c.ID), raft.BugTruncatedWithholdsVote
	})
	lead := tc.leader()
	for k := 0; k < 20; k++ {
		if r := do(t, "PUT", tc.url(lead, "/v1/kv/k"), strings.Repeat("v", 200)); r.status != 200 {
			t.Fatalf("put: %d %s", r.status, r.body)
		}
	}
	for id := raft.NodeID(1); id <= 3; id++ {
		tc.stop(id)
	}
	// Flip a byte of an early record of node 3 (later batches vouch for it).
	seg := filepath.Join(tc.dirs[3], "wal", "seg-0000000000000001.wal")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, bytes.Repeat([]byte("v"), 200))
	if at < 0 {
		t.Fatal("no record found to damage")
	}
	b[at+10] ^= 1
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	n3 := tc.start(3)
	if n3.rec.Verdict.String() != "TRUNCATED" {
		t.Fatalf("recovery verdict %v, want TRUNCATED", n3.rec.Verdict)
	}
	var st StatusBody
	r := do(t, "GET", tc.url(3, "/v1/status"), "")
	if err := json.Unmarshal([]byte(r.body), &st); err != nil {
		t.Fatal(err)
	}
	if st.Recovery.Verdict != "TRUNCATED" || st.Fence == "ELIGIBLE" || !strings.Contains(st.NotServing, "fenced") {
		t.Fatalf("status of the truncated node: verdict %s fence %s not_serving %q", st.Recovery.Verdict, st.Fence, st.NotServing)
	}
	r = do(t, "GET", tc.url(3, "/readyz"), "")
	if r.status != 503 || !strings.Contains(r.body, `"fenced"`) {
		t.Fatalf("readyz of the truncated node: %d %s", r.status, r.body)
	}
	// The transitions, each logged once: the verdict with its boundary,
	// the fence set at boot; an operator's campaign refused with the
	// durable tip against the learned commit.
	rec := logs.one(t, 3, "server: recovery says TRUNCATED")
	if num(t, rec, "truncated_after") != n3.rec.IndexLast || rec["stop_segment"] == "" || num(t, rec, "stop_offset") == 0 {
		t.Fatalf("the TRUNCATED line lacks its boundary: %v", rec)
	}
	set := logs.one(t, 3, "replica: FENCE SET")
	if set["fence"] == "ELIGIBLE" || set["row"] == "" {
		t.Fatalf("fence set line %v", set)
	}
	if err := n3.run.Submit(replica.Event{Kind: replica.EventCampaign}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(logs.lines(t, 3, "replica: campaign refused")) == 1 })
	ref := logs.one(t, 3, "replica: campaign refused")
	if num(t, ref, "learned_commit") != st.LearnedCommit || num(t, ref, "durable_tip") != st.Durable || num(t, ref, "truncated_at_term") == 0 {
		t.Fatalf("campaign refusal line %v; status learned %d durable %d", ref, st.LearnedCommit, st.Durable)
	}
	// It stays up, fenced, until the others come back; then it catches up
	// and serves.
	tc.start(1)
	tc.start(2)
	deadline := time.Now().Add(20 * time.Second)
	for {
		r = do(t, "GET", tc.url(3, "/readyz"), "")
		if r.status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fence never released: %s", r.body)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a bound
	}
	if g := do(t, "GET", tc.url(3, "/v1/kv/k"), ""); g.status != 200 || g.body != strings.Repeat("v", 200) {
		t.Fatalf("read after the repair: %d", g.status)
	}
	rel := logs.one(t, 3, "replica: fence released")
	if rel["fence"] != "ELIGIBLE" || rel["was"] == "ELIGIBLE" || num(t, rel, "durable") < num(t, rel, "learned_commit") {
		t.Fatalf("fence released line %v", rel)
	}
	logs.one(t, 3, "replica: FENCE SET") // still once
	for id := raft.NodeID(1); id <= 2; id++ {
		if ls := logs.lines(t, id, "replica: FENCE"); len(ls) != 0 {
			t.Fatalf("node %d was never fenced: %v", id, ls)
		}
	}
}

// TestTraceDir: --trace writes the core's trace, an Init line first, that
// the strict trace decoder accepts.
func TestTraceDir(t *testing.T) {
	dir := t.TempDir()
	tc := newTestCluster(t, 1, func(c *Config) { c.TraceDir = dir })
	lead := tc.leader()
	if r := do(t, "PUT", tc.url(lead, "/v1/kv/k"), "v"); r.status != 200 {
		t.Fatalf("put: %d", r.status)
	}
	tc.stop(lead)
	files, _ := filepath.Glob(filepath.Join(dir, "n1-*.ndjson"))
	if len(files) != 1 {
		t.Fatalf("trace files %v", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := trace.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 3 || evs[0].Action != "Init" {
		t.Fatalf("%d events, first %v", len(evs), evs[0].Action)
	}
}
