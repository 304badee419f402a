package raft

import (
	"errors"
	"testing"
)

// After its WAL failed, a node answers TransferLeadership with ErrWALFailed
// (the reason), not ErrNotLeader (the step-down that followed from it).
func TestTransferLeadershipAfterWALFailure(t *testing.T) {
	n := mustNode(t, testConfig(1, NewMemoryStorage(), 1, 2, 3), Boot{})
	n.Advance(AdvanceInfo{Failed: true, Reason: "EIO"})
	if err := n.TransferLeadership(2); !errors.Is(err, ErrWALFailed) {
		t.Fatalf("transfer after the WAL failed: %v, want ErrWALFailed", err)
	}
}
