package proc

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestProcessStateCheck: node 3 is a planted divergent member
// (--testing-diverge-at 20: its recorded state hashes differ from index
// 20 on). Under the clients' traffic the state check fences it — its
// status says STATE DIVERGED, /readyz answers 503, /metrics
// durableraft_state_diverged 1, it never leads — and the cluster goes on
// with the other two; every acknowledged write is read back and the
// history is linearizable.
func TestProcessStateCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	v := execute(t, scenario{name: "statecheck", clients: 4, seed: 13,
		args: []string{"--state-check-every", "10"},
		nodeArgs: func(id int) []string {
			if id == 3 {
				return []string{"--testing-diverge-at", "20"}
			}
			return nil
		},
		faults: []fault{{"the divergent member fenced by the state check", divergedFenced, 300 * time.Millisecond}}})
	if v.failed() {
		t.Fatalf("the run failed: %v", v)
	}
}

func divergedFenced(r *run) error {
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := r.c.Status(ctx, 3)
		if err == nil && strings.Contains(st.NotServing, "STATE DIVERGED") {
			if st.Role == "Leader" {
				return fmt.Errorf("the fenced node 3 leads")
			}
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node 3 not fenced within 20 s (last status %+v, %v)", st, err)
		}
		time.Sleep(20 * time.Millisecond) // the status is the condition; bounded above
	}
	n := r.c.Node(3)
	if err := httpOK("http://" + n.ClientAddr + "/readyz"); err == nil {
		return fmt.Errorf("node 3 says it is ready")
	}
	m, err := scrapeMetrics("http://" + n.ClientAddr + "/metrics")
	if err != nil {
		return err
	}
	if m["durableraft_state_diverged"] != 1 {
		return fmt.Errorf("node 3 durableraft_state_diverged %v", m["durableraft_state_diverged"])
	}
	if err := logContains(n.LogPath, "STATE DIVERGED"); err != nil {
		return err
	}
	for _, id := range []int{1, 2} {
		if err := logContains(r.c.Node(id).LogPath, "a member's state differs"); err != nil {
			return err
		}
	}
	lead, err := leaderAmong(r, 3)
	if err != nil {
		return err
	}
	if err := r.awaitAcked(r.ackedCount() + 30); err != nil {
		return fmt.Errorf("under leader %d with node 3 fenced: %w", lead, err)
	}
	return nil
}
