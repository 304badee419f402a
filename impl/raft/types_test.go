package raft

import "testing"

// TestVerdictString: the verdicts print as the spec and docs name them
// (logs, alerts, Status).
func TestVerdictString(t *testing.T) {
	for v, want := range map[Verdict]string{VerdictClean: "CLEAN", VerdictTornTail: "TORN_TAIL", VerdictTruncated: "TRUNCATED", 9: "Verdict(9)"} {
		if got := v.String(); got != want {
			t.Errorf("Verdict %d prints %q, want %q", uint8(v), got, want)
		}
	}
}

// TestTimeoutNowOfAnotherTerm: a follower campaigns on its leader's
// TimeoutNow of the current term, and ignores one of an older term from the
// same node (a delayed transfer of a term it led before).
func TestTimeoutNowOfAnotherTerm(t *testing.T) {
	for _, tc := range []struct {
		term     uint64
		campaign bool
	}{{4, true}, {2, false}, {3, false}} {
		n := mustNode(t, testConfig(2, logOf(1, 1)), Boot{HardState: HardState{Term: 4}, Verdict: VerdictClean})
		n.Ready()
		if err := n.Step(Message{Type: MsgApp, From: 1, To: 2, Term: 4, PrevLogIndex: 2, PrevLogTerm: 1}); err != nil {
			t.Fatal(err)
		}
		n.Ready()
		if st := n.Status(); st.Lead != 1 || st.Role != RoleFollower {
			t.Fatalf("set-up: %+v", st)
		}
		if err := n.Step(Message{Type: MsgTimeoutNow, From: 1, To: 2, Term: tc.term}); err != nil {
			t.Fatal(err)
		}
		if st := n.Status(); (st.Role == RoleCandidate) != tc.campaign {
			t.Errorf("TimeoutNow of term %d at term 4: role %v, term %d; want campaign %v", tc.term, st.Role, st.HardState.Term, tc.campaign)
		}
	}
}
