package quorum

import (
	"math/rand/v2"
	"testing"
)

func TestNewMajority(t *testing.T) {
	for _, c := range []struct {
		ids  []uint64
		want string
		ok   bool
	}{
		{nil, "()", true},
		{[]uint64{3, 1, 2}, "(1 2 3)", true},
		{[]uint64{1, 1}, "", false},
		{[]uint64{0, 1}, "", false},
	} {
		m, err := NewMajority(c.ids...)
		if (err == nil) != c.ok || (c.ok && m.String() != c.want) {
			t.Errorf("NewMajority(%v) = %v, %v; want %s ok=%v", c.ids, m, err, c.want, c.ok)
		}
	}
	if err := (Majority{2, 1}).Valid(); err == nil {
		t.Error("unsorted majority valid")
	}
}

func TestCommittedIndex(t *testing.T) {
	for _, c := range []struct {
		voters []uint64
		acked  map[uint64]uint64
		want   uint64
	}{
		{nil, nil, 0},
		{[]uint64{1}, map[uint64]uint64{1: 5}, 5},
		{[]uint64{1, 2}, map[uint64]uint64{1: 5, 2: 3}, 3},
		{[]uint64{1, 2, 3}, map[uint64]uint64{1: 5, 2: 3}, 3},
		{[]uint64{1, 2, 3}, map[uint64]uint64{1: 5}, 0},
		{[]uint64{1, 2, 3, 4}, map[uint64]uint64{1: 5, 2: 4, 3: 3, 4: 2}, 3},
		{[]uint64{1, 2, 3, 4, 5}, map[uint64]uint64{1: 9, 2: 8, 3: 1, 4: 1, 5: 7}, 7},
		// A learner's acknowledgment (id 9) is not a voter's.
		{[]uint64{1, 2, 3}, map[uint64]uint64{1: 5, 9: 5}, 0},
	} {
		m, err := NewMajority(c.voters...)
		if err != nil {
			t.Fatal(err)
		}
		got := m.CommittedIndex(func(id uint64) (uint64, bool) { v, ok := c.acked[id]; return v, ok })
		if got != c.want {
			t.Errorf("%v with %v: committed %d, want %d", m, c.acked, got, c.want)
		}
	}
}

// TestCommittedIndexNaive compares CommittedIndex with the definition:
// the largest index that at least Size() voters acknowledged (9 voters
// take the allocating path too).
func TestCommittedIndexNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for it := 0; it < 2000; it++ {
		n := 1 + rng.IntN(9)
		var ids []uint64
		acked := map[uint64]uint64{}
		for k := 0; k < n; k++ {
			id := uint64(k*3 + 1 + rng.IntN(3))
			ids = append(ids, id)
			if rng.IntN(4) > 0 {
				acked[id] = rng.Uint64N(10)
			}
		}
		m, err := NewMajority(ids...)
		if err != nil {
			t.Fatal(err)
		}
		var naive uint64
		for idx := uint64(0); idx <= 10; idx++ {
			c := 0
			for _, id := range m {
				if acked[id] >= idx {
					c++
				}
			}
			if c >= m.Size() {
				naive = idx
			}
		}
		if got := m.CommittedIndex(func(id uint64) (uint64, bool) { v, ok := acked[id]; return v, ok }); got != naive {
			t.Fatalf("%v acked %v: %d, naive %d", m, acked, got, naive)
		}
	}
}

// TestCommittedIndexAllocates: up to 7 voters (the stack buffer's size)
// the tally allocates nothing; beyond, once.
func TestCommittedIndexAllocates(t *testing.T) {
	acked := func(id uint64) (uint64, bool) { return id, true }
	for _, c := range []struct {
		m      Majority
		allocs float64
	}{
		{Majority{1, 2, 3, 4, 5}, 0},
		{Majority{1, 2, 3, 4, 5, 6, 7}, 0},
		{Majority{1, 2, 3, 4, 5, 6, 7, 8}, 1},
	} {
		if a := testing.AllocsPerRun(100, func() { c.m.CommittedIndex(acked) }); a != c.allocs {
			t.Errorf("%v allocations for %d voters, want %v", a, len(c.m), c.allocs)
		}
	}
}

func TestSize(t *testing.T) {
	for _, c := range []struct {
		m    Majority
		want int
	}{
		{Majority{}, 0}, {Majority{1}, 1}, {Majority{1, 2}, 2}, {Majority{1, 2, 3}, 2},
		{Majority{1, 2, 3, 4}, 3}, {Majority{1, 2, 3, 4, 5}, 3},
	} {
		if got := c.m.Size(); got != c.want {
			t.Errorf("%v.Size() = %d, want %d", c.m, got, c.want)
		}
	}
}

func TestVoteResultString(t *testing.T) {
	for r, want := range map[VoteResult]string{VotePending: "pending", VoteLost: "lost", VoteWon: "won", 0: "VoteResult(0)", 9: "VoteResult(9)"} {
		if got := r.String(); got != want {
			t.Errorf("VoteResult(%d).String() = %q, want %q", uint8(r), got, want)
		}
	}
}

func TestVoteResult(t *testing.T) {
	y, n := true, false
	for _, c := range []struct {
		voters []uint64
		votes  map[uint64]bool
		want   VoteResult
	}{
		{nil, nil, VoteLost},
		{[]uint64{1}, map[uint64]bool{}, VotePending},
		{[]uint64{1}, map[uint64]bool{1: y}, VoteWon},
		{[]uint64{1}, map[uint64]bool{1: n}, VoteLost},
		{[]uint64{1, 2}, map[uint64]bool{1: y}, VotePending},
		{[]uint64{1, 2}, map[uint64]bool{1: y, 2: n}, VoteLost},
		{[]uint64{1, 2, 3}, map[uint64]bool{1: y, 2: y}, VoteWon},
		{[]uint64{1, 2, 3}, map[uint64]bool{1: y, 2: n}, VotePending},
		{[]uint64{1, 2, 3}, map[uint64]bool{2: n, 3: n}, VoteLost},
		{[]uint64{1, 2, 3, 4}, map[uint64]bool{1: y, 2: y}, VotePending},
		{[]uint64{1, 2, 3, 4}, map[uint64]bool{1: y, 2: y, 3: y}, VoteWon},
		{[]uint64{1, 2, 3, 4}, map[uint64]bool{1: n, 2: n}, VoteLost},
		// Votes of non-voters (a learner, a removed member) do not count.
		{[]uint64{1, 2, 3}, map[uint64]bool{1: y, 7: y, 8: y}, VotePending},
	} {
		if got := Majority(c.voters).VoteResult(c.votes); got != c.want {
			t.Errorf("%v votes %v: %v, want %v", c.voters, c.votes, got, c.want)
		}
	}
}

func TestIsQuorum(t *testing.T) {
	m := Majority{1, 2, 3, 4}
	in := map[uint64]bool{1: true, 2: true, 5: true}
	if m.IsQuorum(func(id uint64) bool { return in[id] }) {
		t.Error("2 of 4 (and a non-voter) is a quorum")
	}
	in[3] = true
	if !m.IsQuorum(func(id uint64) bool { return in[id] }) {
		t.Error("3 of 4 is no quorum")
	}
	if (Majority{}).IsQuorum(func(uint64) bool { return true }) {
		t.Error("the empty configuration has a quorum")
	}
}
