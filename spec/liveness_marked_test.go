package spec_test

import (
	"strings"
	"testing"

	"github.com/durableraft/durableraft/spec"
)

// The liveness hole of the ambiguous tail's rule (issue 10 item 2,
// docs/durable-raft.md, "The ambiguous tail"), found by conformance/sim
// (seeds 28, 43, 117, 147, 151, 159, 171 of 1-200): at 3 servers, s1 leads
// term 2, flushes entry 1 and its disk is corrupted (TRUNCATED: it grants
// no vote), and s2 reboots after a power cut that tore nothing
// (AMBIGUOUS: its grants count only towards a unanimous election). No
// election can be unanimous while s1 grants nothing, s3 alone is not a
// quorum, and only a leader repairs s1 (FenceReleases): from that state no
// fault-free continuation elects a leader that commits. With MarkedVotes
// (marked votes, what impl/raft runs: every voter that is not CLEAN grants marked)
// one does: a unanimous election.
func TestLivenessTruncatedAndAmbiguous(t *testing.T) {
	cfg := spec.Config{Profile: spec.ProfileDurable, Servers: 3, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 1,
		Corruptions: 1, PowerLosses: 1}
	opt := spec.LivenessOptions{ExtraTerm: 1, ExtraLog: 1}
	walk := []string{
		"Timeout(s1)", "Timeout(s2)",
		"RequestVote(s1, s1)", "HandleRequestVoteRequest", "HandleRequestVoteResponse",
		"RequestVote(s1, s2)", "HandleRequestVoteRequest", "HandleRequestVoteResponse",
		"BecomeLeader(s1)", "ClientRequest(s1, v1)", "Flush(s1)", "Corrupt(s1) keeps 0", "PowerLoss(s2) keeps 0",
	}
	last := walkTo(t, model(t, cfg), walk)
	if last.Verdict[1] != spec.Truncated || last.Verdict[2] != spec.Ambiguous || last.Verdict[3] != spec.Clean {
		t.Fatalf("the walk does not end with s1 TRUNCATED, s2 AMBIGUOUS, s3 CLEAN: %v", last.Verdict[1:4])
	}
	if ok, n := spec.LiveFrom(model(t, cfg), last, opt); ok || n < 100 {
		t.Fatalf("the rule: a leader commits again from the last state (%v, %d states)", ok, n)
	} else {
		t.Logf("the rule: stuck, %d continuation states", n)
	}
	marked := cfg
	marked.MarkedVotes = true
	last = walkTo(t, model(t, marked), walk)
	if ok, n := spec.LiveFrom(model(t, marked), last, opt); !ok {
		t.Fatalf("marked votes: no continuation of the same state commits (%d states)", n)
	} else {
		t.Logf("marked votes: a leader commits after %d continuation states", n)
	}
}

// walkTo takes, from Init, the first successor whose label starts with
// each prefix in turn, and returns the last state.
func walkTo(t *testing.T, m *spec.Model, prefixes []string) *spec.State {
	t.Helper()
	cur := m.Init()
	for k, p := range prefixes {
		var next *spec.State
		m.Next(cur, func(n spec.State, l spec.Label) {
			if next == nil && strings.HasPrefix(l.String(), p) {
				next = &n
			}
		})
		if next == nil {
			t.Fatalf("step %d: no successor %q", k+1, p)
		}
		cur = next
	}
	return cur
}
