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
