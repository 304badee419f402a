package raft

import "testing"

// TestDeclaredBugs: which switches a trace's config names. The reporting
// and first-boot switches never (no step of a trace is theirs), the
// membership and repair ones only with their steps, the others always.
func TestDeclaredBugs(t *testing.T) {
	for _, c := range []struct {
		name   string
		params TraceParams
		want   Bug
	}{
		{"a protocol switch", TraceParams{Bugs: BugSelfCountsAppended}, BugSelfCountsAppended},
		{"a reporting switch", TraceParams{Bugs: BugLagIsFence | BugSelfCountsAppended}, BugSelfCountsAppended},
		{"the first-boot switches", TraceParams{Bugs: WipeBugs | BugSelfCountsAppended, Membership: true, Repair: true}, BugSelfCountsAppended},
		{"membership switches without membership", TraceParams{Bugs: BugConfigWhileUncommitted}, 0},
		{"membership switches with membership", TraceParams{Bugs: BugConfigWhileUncommitted, Membership: true}, BugConfigWhileUncommitted},
		{"repair switches without repair", TraceParams{Bugs: BugRepairVotesEarly}, 0},
		{"repair switches with repair", TraceParams{Bugs: BugRepairVotesEarly, Repair: true}, BugRepairVotesEarly},
	} {
		if got := c.params.declaredBugs(); got != c.want {
			t.Errorf("%s: declared %v, want %v", c.name, got, c.want)
		}
	}
}
