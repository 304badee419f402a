package raft

import (
	"errors"
	"testing"
)

// TestBootTermLimits: a log's terms are checked at boot against TermMax
// and the order of terms, at and past each limit (bootLog, validateHardState).
func TestBootTermLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		terms []uint64
		hs    HardState
		valid bool
	}{
		{"terms 1, 2", []uint64{1, 2}, HardState{Term: 2}, true},
		{"an entry at TermMax", []uint64{1, TermMax}, HardState{Term: TermMax}, true},
		{"an entry past TermMax", []uint64{1, TermMax + 1}, HardState{Term: TermMax}, false},
		{"a term going down", []uint64{2, 1}, HardState{Term: 2}, false},
		{"term 0", []uint64{0}, HardState{Term: 1}, false},
		{"hard state at TermMax", []uint64{1}, HardState{Term: TermMax}, true},
		{"hard state past TermMax", []uint64{1}, HardState{Term: TermMax + 1}, false},
		// A TRUNCATED mark is of a term the node knew (at least 1: a first
		// boot's empty hard state has term 0).
		{"marked at term 1 before any hard state", nil, HardState{TruncatedAtTerm: 1}, true},
		{"marked at term 2 before any hard state", nil, HardState{TruncatedAtTerm: 2}, false},
		{"marked at its term", []uint64{1}, HardState{Term: 3, TruncatedAtTerm: 3}, true},
		{"marked past its term", []uint64{1}, HardState{Term: 3, TruncatedAtTerm: 4}, false},
		{"entries of term 1 before any hard state", []uint64{1, 1}, HardState{}, true},
		{"entries of term 2 before any hard state", []uint64{1, 2}, HardState{}, false},
	} {
		_, err := NewNode(testConfig(1, logOf(tc.terms...)), Boot{HardState: tc.hs, Verdict: VerdictClean})
		if (err == nil) != tc.valid {
			t.Errorf("%s: %v, want valid %v", tc.name, err, tc.valid)
		}
	}
}

// TestCompactLimit: the driver may compact only through the lowest of the
// applied, committed and durable indexes and the newest snapshot; each in
// turn is the lowest.
func TestCompactLimit(t *testing.T) {
	for _, tc := range []struct{ applied, committed, durable, snap, want uint64 }{
		{4, 5, 6, 7, 4},
		{5, 4, 6, 7, 4},
		{6, 5, 4, 7, 4},
		{7, 6, 5, 4, 4},
		{5, 5, 5, 5, 5},
	} {
		n := mustNode(t, testConfig(1, logOf(1, 1, 1, 1, 1, 1, 1)), Boot{HardState: HardState{Term: 1}, Verdict: VerdictClean})
		n.log.applied, n.log.committed, n.log.durable, n.snaps.snap.Index = tc.applied, tc.committed, tc.durable, tc.snap
		if got := n.CompactLimit(); got != tc.want {
			t.Errorf("%+v: CompactLimit %d", tc, got)
		}
	}
}

// failingTerms is a storage whose Term fails at one index (a disk read
// error at boot).
type failingTerms struct {
	*MemoryStorage
	at uint64
}

func (s failingTerms) Term(i uint64) (uint64, error) {
	if i == s.at {
		return 0, ErrUnavailable
	}
	return s.MemoryStorage.Term(i)
}

// TestBootStorageTermErrors: a term storage cannot read at boot is an
// error of NewNode, wrapping storage's, wherever it is read: the
// compaction base, a run's first entry, the binary search's probe.
func TestBootStorageTermErrors(t *testing.T) {
	for _, at := range []uint64{0, 1, 3} {
		st := failingTerms{logOf(1, 1, 1, 1, 1), at}
		_, err := NewNode(testConfig(1, st), Boot{HardState: HardState{Term: 1}, Verdict: VerdictClean})
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("term of %d unreadable: %v, want ErrUnavailable", at, err)
		}
	}
}

// TestFenceStateDivergedPreCandidate: a member fenced in the middle of its
// pre-vote round is a follower at once (no campaign follows the round).
func TestFenceStateDivergedPreCandidate(t *testing.T) {
	cfg := testConfig(1, NewMemoryStorage())
	cfg.PreVote = true
	n := mustNode(t, cfg, Boot{Verdict: VerdictClean})
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	if r := n.Status().Role; r != RolePreCandidate {
		t.Fatalf("after Campaign with pre-vote: %v", r)
	}
	n.FenceStateDiverged("test")
	if s := n.Status(); s.Role != RoleFollower || s.StateFenced == "" {
		t.Fatalf("fenced pre-candidate: %+v", s)
	}
}

// TestReadConfirmedMarkedOnlyWhenConfirmed: the coverage mark of a read
// confirmed by its round is set when one is, and not by a round that
// confirms none.
func TestReadConfirmedMarkedOnlyWhenConfirmed(t *testing.T) {
	var marks int
	cfg := testConfig(1, NewMemoryStorage(), 1)
	cfg.OnMark = func(m Mark) {
		if m == MarkReadConfirmed {
			marks++
		}
	}
	n := mustNode(t, cfg, Boot{Verdict: VerdictClean})
	n.releaseReads()
	if marks != 0 {
		t.Fatalf("%d MarkReadConfirmed with no read pending", marks)
	}
}
