package spec

import (
	"bytes"
	"testing"
)

// repairProductionWithout is the sub-model the production repair tests
// search: no snapshots, drops, duplicates, step-downs or crashes (their
// interplay with the repair is the full model's; docs/repair.md).
const repairProductionWithout = "SendSnapshot,DropMessage,DuplicateMessage,StepDown,Crash"

// TestRepairProductionHolds: the repair as steps of the production profile
// (repairprod.go: the take by ranges, the count once durable, the messages
// held in the persistence window) holds every invariant, and the repair is
// reached: a member released by its peers after taking a peer's log, then
// a leader elected with its vote. The counts are the explorer's on this
// sub-model.
func TestRepairProductionHolds(t *testing.T) {
	m, err := NewModel(Config{Profile: ProfileDurable, Servers: 2, Values: 1, MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1,
		Corruptions: 1, Repair: true, Production: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Explore(m, Options{Workers: 2, Without: mustActions(t, repairProductionWithout)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%s violated: %s", res.Violation.Invariant, res.Violation.Detail)
	}
	if res.Distinct != 124973 || res.Generated != 880243 || !res.Complete {
		t.Errorf("%d distinct, %d generated (complete %v), want 124973 / 880243", res.Distinct, res.Generated, res.Complete)
	}
	for _, r := range res.Reached {
		switch r.Name {
		case "RepairedByPeers", "RepairTakesLog", "LeaderAfterRepair":
			if !r.Found {
				t.Errorf("%s not reached", r.Name)
			}
		}
	}
}

// TestRepairProductionBugs: each repair switch breaks RepairCovers in the
// production profile too, and the counterexample, written as a trace, is
// accepted by the trace checker (a spec trace with -repair round-trips).
func TestRepairProductionBugs(t *testing.T) {
	for _, c := range []struct {
		bug     Bug
		servers int
		without string
	}{
		{BugRepairVotesEarly, 3, repairProductionWithout + ",Timeout@3"},
		{BugRepairIgnoresTerm, 2, repairProductionWithout},
	} {
		t.Run(c.bug.String(), func(t *testing.T) {
			m, err := NewModel(Config{Profile: ProfileDurable, Servers: c.servers, Values: 1, MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1,
				Corruptions: 1, Repair: true, Production: true, Bugs: c.bug})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Explore(m, Options{Workers: 1, Invariant: "RepairCovers", Without: mustActions(t, c.without)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Violation == nil {
				t.Fatalf("no violation with -bug %v", c.bug)
			}
			var b bytes.Buffer
			if err := m.WriteTrace(&b, res.Violation.Trace); err != nil {
				t.Fatal(err)
			}
			if n, err := CheckTraceReader(&b); err != nil {
				t.Errorf("the counterexample's trace is rejected after %d events: %v", n, err)
			}
			t.Logf("%s: %s (depth %d)", res.Violation.Invariant, res.Violation.Detail, res.Depth)
		})
	}
}
