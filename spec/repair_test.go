package spec

import "testing"

// TestRepairHolds: with the repair from peers (-repair) and every rule on,
// every invariant holds and the repair is reached: a member released by its
// peers' answers, having taken a peer's log, and then a leader elected
// with its vote (docs/repair.md has the larger runs). The counts are the
// explorer's at these bounds; without -repair the model is the durable
// profile's, whose counts the other tests pin.
func TestRepairHolds(t *testing.T) {
	m, err := NewModel(Config{Profile: ProfileDurable, Servers: 2, Values: 1, MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1,
		Corruptions: 1, Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Explore(m, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%s violated: %s", res.Violation.Invariant, res.Violation.Detail)
	}
	if res.Distinct != 39678 || res.Generated != 269551 || !res.Complete {
		t.Errorf("%d distinct, %d generated (complete %v), want 39678 / 269551", res.Distinct, res.Generated, res.Complete)
	}
	for _, r := range res.Reached {
		switch r.Name {
		case "RepairedByPeers", "RepairTakesLog", "LeaderAfterRepair", "FenceReleased":
			if !r.Found {
				t.Errorf("%s not reached", r.Name)
			}
		}
	}
}

// TestRepairBugs: each switch of the repair rule breaks RepairCovers, the
// invariant it exists for, at small bounds: released after one answer
// (3 servers: the answer of the one member that lacks the write), and
// answers counted in the corruption's own term (2 servers: the leader
// answers before its own fdatasync, then commits with the lost
// acknowledgment).
func TestRepairBugs(t *testing.T) {
	for _, c := range []struct {
		bug     Bug
		servers int
		without string
	}{
		{BugRepairVotesEarly, 3, "DropMessage,Timeout@3"},
		{BugRepairIgnoresTerm, 2, ""},
	} {
		t.Run(c.bug.String(), func(t *testing.T) {
			m, err := NewModel(Config{Profile: ProfileDurable, Servers: c.servers, Values: 1, MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1,
				Corruptions: 1, Repair: true, Bugs: c.bug})
			if err != nil {
				t.Fatal(err)
			}
			opt := Options{Workers: 1, Invariant: "RepairCovers"}
			if c.without != "" {
				opt.Without = mustActions(t, c.without)
			}
			res, err := Explore(m, opt)
			if err != nil {
				t.Fatal(err)
			}
			if res.Violation == nil {
				t.Fatalf("no violation with -bug %v", c.bug)
			}
			t.Logf("%s: %s (depth %d)", res.Violation.Invariant, res.Violation.Detail, res.Depth)
		})
	}
}
