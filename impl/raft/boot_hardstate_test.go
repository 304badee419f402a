package raft_test

import (
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// A hard state whose term is below the last entry's is refused at boot: no
// correct storage writes an entry of a term before the term itself, so the
// pair says the storage lost or mixed up what it held. Only with
// Boot.HardStateLost, where the copy is known to be untrustworthy, does the
// node raise the term to the last entry's and go on (passively).
func TestBootHardStateBelowLastEntryTerm(t *testing.T) {
	for _, lost := range []bool{false, true} {
		st := raft.NewMemoryStorage()
		if err := st.Append([]raft.Entry{{Index: 1, Term: 1}, {Index: 2, Term: 3}}); err != nil {
			t.Fatal(err)
		}
		cfg := raft.Config{ID: 1, Voters: []raft.NodeID{1, 2, 3}, ElectionTick: 10, HeartbeatTick: 1, Rand: seeded{}, Storage: st}
		n, err := raft.NewNode(cfg, raft.Boot{HardState: raft.HardState{Term: 2}, HardStateLost: lost})
		switch {
		case !lost && (err == nil || !strings.Contains(err.Error(), "beyond the hard state's term")):
			t.Errorf("hard state of term 2 with a last entry of term 3: %v, want refused", err)
		case lost && err != nil:
			t.Errorf("the same with HardStateLost: %v, want a passive node", err)
		case lost:
			if s := n.Status(); s.HardState.Term != 3 || !s.HardStateLost {
				t.Errorf("with HardStateLost: term %d, lost %v; want term 3 (the last entry's), lost", s.HardState.Term, s.HardStateLost)
			}
		}
	}
}

// A TRUNCATED mark of a term beyond the hard state's term is refused at boot:
// the mark is the term at which the log was cut, never a later one.
func TestBootTruncatedAtTermBeyondTerm(t *testing.T) {
	cfg := raft.Config{ID: 1, Voters: []raft.NodeID{1, 2, 3}, ElectionTick: 10, HeartbeatTick: 1, Rand: seeded{}, Storage: raft.NewMemoryStorage()}
	if _, err := raft.NewNode(cfg, raft.Boot{HardState: raft.HardState{Term: 2, TruncatedAtTerm: 3}}); err == nil || !strings.Contains(err.Error(), "truncatedAtTerm") {
		t.Fatalf("TruncatedAtTerm 3 with term 2: %v, want refused", err)
	}
	if _, err := raft.NewNode(cfg, raft.Boot{HardState: raft.HardState{Term: 3, TruncatedAtTerm: 3}, Verdict: raft.VerdictTruncated}); err != nil {
		t.Fatalf("TruncatedAtTerm 3 with term 3: %v", err)
	}
}
