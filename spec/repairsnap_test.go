package spec

import (
	"bytes"
	"testing"
)

// TestRepairSnapshotHolds: the repair answered with a snapshot
// (repairsnap.go) holds every invariant in the production profile with
// -repair, and a TRUNCATED member installs a peer's snapshot and is then
// released by its peers. The sub-model leaves out a leader's snapshots,
// drops, duplicates and plain crashes (the production repair tests' own,
// less StepDown: the core's term raise is Timeout then StepDown, and a
// snapshot is installed by a follower), and s2 never leads. The counts are
// the explorer's on it; the witnesses, as traces, are accepted.
func TestRepairSnapshotHolds(t *testing.T) {
	m, err := NewModel(Config{Profile: ProfileDurable, Servers: 2, Values: 1, MaxTerm: 3, MaxLog: 1, MaxDup: 1, MaxMsgs: 1,
		Corruptions: 1, Repair: true, Production: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Explore(m, Options{Workers: 2, Without: mustActions(t, "SendSnapshot,DropMessage,DuplicateMessage,Crash,BecomeLeader@2")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%s violated: %s", res.Violation.Invariant, res.Violation.Detail)
	}
	if !res.Complete {
		t.Fatalf("incomplete: %d distinct", res.Distinct)
	}
	if res.Distinct != 397912 || res.Generated != 2559374 {
		t.Errorf("%d distinct, %d generated (depth %d), want 397912 / 2559374", res.Distinct, res.Generated, res.Depth)
	}
	for _, r := range res.Reached {
		switch r.Name {
		case "RepairSnapshotInstalled", "RepairedByPeers", "SnapshotInstalled":
			if !r.Found {
				t.Errorf("%s not reached", r.Name)
				continue
			}
			// The witness, written as a trace, is accepted by the checker
			// (a SendRepairSnapshot event logs the request and its cut).
			var b bytes.Buffer
			if err := m.WriteTrace(&b, r.Witness()); err != nil {
				t.Fatal(err)
			}
			if n, err := CheckTraceReader(&b); err != nil {
				t.Errorf("%s: the witness's trace is rejected after %d events: %v", r.Name, n, err)
			}
		}
	}
}
