package proc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/trace"
	"github.com/durableraft/durableraft/viz"
)

// TestProcessTraceClocks: every message between raftd processes carries
// its sender's Lamport clock, and each node's trace resumes its clock from
// the tail of its previous boot's. Under four clients the leader and then
// a follower are killed with kill -9 and restarted: every restarted node's
// new trace starts above the last clock of its previous one, the merge by
// clock is accepted by the spec as a whole (checkTraces: the clocks never
// go back at any node across its restarts), and with one message's term
// changed it is rejected at that event. Without the resume (the restarted
// boot's clocks counted from 1 again) the merge is refused.
func TestProcessTraceClocks(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	v := execute(t, scenario{name: "clocks", clients: 4, seed: 17, mutate: true,
		faults: []fault{
			{"warm up", func(*run) error { return nil }, 300 * time.Millisecond},
			{"kill -9 the leader, restart it", killLeader, 300 * time.Millisecond},
			{"kill -9 a follower, restart it", killFollower, 300 * time.Millisecond},
		},
		inspectTraces: checkResumedClocks})
	if v.failed() {
		t.Fatalf("the run failed: %v", v)
	}
}

// bootFiles is node id's trace files in dir in boot order (raftd names
// them n<id>-<unix ns>.ndjson).
func bootFiles(t *testing.T, dir string, id int) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("n%d-*.ndjson", id)))
	if err != nil {
		t.Fatal(err)
	}
	ns := func(p string) int64 {
		var v int64
		fmt.Sscanf(strings.TrimPrefix(filepath.Base(p), fmt.Sprintf("n%d-", id)), "%d.ndjson", &v)
		return v
	}
	slices.SortFunc(paths, func(a, b string) int { return int(ns(a) - ns(b)) })
	return paths
}

func readTrace(t *testing.T, path string) []trace.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := trace.DecodeOptions(bytes.NewReader(b), trace.ReadOptions{TornTail: true}) // a kill may tear the last line
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return evs
}

// checkResumedClocks: each boot of a restarted node starts above its
// previous boot's last clock; with the clocks of a restarted boot counted
// from 1 again, as without the resume, the merge is refused.
func checkResumedClocks(t *testing.T, dir string) {
	restarted := 0
	for id := 1; id <= 3; id++ {
		paths := bootFiles(t, dir, id)
		for k := 1; k < len(paths); k++ {
			before, after := readTrace(t, paths[k-1]), readTrace(t, paths[k])
			last, first := before[len(before)-1].Clock, after[0].Clock
			if first <= last {
				t.Errorf("node %d's boot %d starts at clock %d, its previous boot ended at %d", id, k+1, first, last)
			}
			t.Logf("node %d boot %d: clock %d..%d, resumed from %d (%d events before)", id, k+1, first, after[len(after)-1].Clock, last, len(before))
			restarted++
		}
	}
	if restarted < 2 {
		t.Fatalf("%d restarts in the traces, want at least 2 (a leader and a follower killed)", restarted)
	}
	// The counterfactual: one restarted boot's clocks from 1 again.
	var sources []viz.Source
	reset := false
	for id := 1; id <= 3; id++ {
		for k, p := range bootFiles(t, dir, id) {
			evs := readTrace(t, p)
			if k > 0 && !reset {
				reset = true
				for j := range evs {
					evs[j].Clock = uint64(j + 1)
				}
			}
			var b bytes.Buffer
			w := trace.NewWriterVersion(&b, evs[0].V)
			for _, e := range evs {
				w.Write(e)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			sources = append(sources, viz.Source{Name: p, R: &b})
		}
	}
	_, err := viz.Build(sources, viz.Options{})
	if err == nil || !strings.Contains(err.Error(), "clock goes back at its boot") {
		t.Fatalf("a restarted boot's clocks from 1: the merge says %v, want a refusal", err)
	}
	t.Logf("without the resume: %v", err)
}
