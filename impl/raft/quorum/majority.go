package quorum

import (
	"fmt"
	"slices"
	"strings"
)

// Majority is a set of voter ids, sorted, without repeats or 0.
//
// Invariant (Valid): ids strictly increase and none is 0. Every method
// assumes it; NewMajority and Valid establish it.
type Majority []uint64

// NewMajority returns the majority configuration of ids (any order); it
// refuses 0 and repeated ids.
func NewMajority(ids ...uint64) (Majority, error) {
	m := Majority(slices.Sorted(slices.Values(ids)))
	if err := m.Valid(); err != nil {
		return nil, err
	}
	return m, nil
}

// Valid checks the invariant.
func (m Majority) Valid() error {
	for k, id := range m {
		if id == 0 || (k > 0 && id <= m[k-1]) {
			return fmt.Errorf("quorum: voters %v: not sorted, repeated or 0", []uint64(m))
		}
	}
	return nil
}

// Has reports whether id is a voter.
func (m Majority) Has(id uint64) bool {
	_, ok := slices.BinarySearch(m, id)
	return ok
}

// Size is the number of voters a quorum needs: a strict majority. An empty
// configuration needs 0 and decides nothing (CommittedIndex, VoteResult).
func (m Majority) Size() int {
	if len(m) == 0 {
		return 0
	}
	return len(m)/2 + 1
}

// IsQuorum reports whether the voters for which in returns true are a
// majority. An empty configuration has no quorum.
func (m Majority) IsQuorum(in func(id uint64) bool) bool {
	c := 0
	for _, id := range m {
		if in(id) {
			c++
		}
	}
	return len(m) > 0 && c >= m.Size()
}

func (m Majority) String() string {
	var b strings.Builder
	b.WriteByte('(')
	for k, id := range m {
		if k > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, id)
	}
	b.WriteByte(')')
	return b.String()
}

// AckedIndexer tells the index a voter has acknowledged: ok is false when
// nothing is known of it (counted as 0).
type AckedIndexer func(id uint64) (index uint64, ok bool)

// CommittedIndex is the largest index that a majority of the voters has
// acknowledged: sorted in decreasing order, the Size()-th acknowledgment.
// An empty configuration commits nothing (0). Ids acked does not know
// count as 0.
func (m Majority) CommittedIndex(acked AckedIndexer) uint64 {
	if len(m) == 0 {
		return 0
	}
	var stack [7]uint64
	vals := stack[:0]
	if len(m) > len(stack) {
		vals = make([]uint64, 0, len(m))
	}
	for _, id := range m {
		v, ok := acked(id)
		if !ok {
			v = 0
		}
		vals = append(vals, v)
	}
	slices.Sort(vals)
	return vals[len(vals)-m.Size()]
}

// VoteResult is how an election stands.
type VoteResult uint8

// The results.
const (
	// VotePending: neither a majority granted nor a majority refused yet.
	VotePending VoteResult = iota + 1
	// VoteLost: so many refused (or cannot vote) that no majority can grant.
	VoteLost
	// VoteWon: a majority granted.
	VoteWon
)

func (r VoteResult) String() string {
	switch r {
	case VotePending:
		return "pending"
	case VoteLost:
		return "lost"
	case VoteWon:
		return "won"
	}
	return fmt.Sprintf("VoteResult(%d)", uint8(r))
}

// VoteResult tallies the votes of the voters: votes[id] is true for a
// grant, false for a refusal, absent for no answer yet. Votes of ids that
// are not voters are ignored. An empty configuration never wins.
func (m Majority) VoteResult(votes map[uint64]bool) VoteResult {
	if len(m) == 0 {
		return VoteLost
	}
	granted, missing := 0, 0
	for _, id := range m {
		v, ok := votes[id]
		switch {
		case !ok:
			missing++
		case v:
			granted++
		}
	}
	q := m.Size()
	switch {
	case granted >= q:
		return VoteWon
	case granted+missing >= q:
		return VotePending
	}
	return VoteLost
}
