// Package ops exercises every operator of raftmutate, and the places where
// none applies. The golden list of its mutants is want.txt.
package ops

import (
	"errors"
	"fmt"
)

var limit = 1 + 1 // package level: never mutated

type node struct {
	term, commit uint64
	log          []uint64
	votes        map[int]bool
}

var errStale = errors.New("stale")

func assert(ok bool, format string, args ...any) {
	if !ok {
		panic(fmt.Sprintf(format, args...))
	}
}

// guard: and-drop, or-drop (nested), cmp-flip, eq-flip, if-negate.
func (n *node) guard(t uint64, ok bool) error {
	if t < n.term || !ok && (t == n.term || n.commit >= t) {
		return errStale
	}
	n.term = t
	if t == 0 {
		return fmt.Errorf("term %d, want at least %d", t, t+1) // text: not mutated
	}
	return nil
}

// clamp: minmax-drop on the builtins, a helper and a selector; the
// argument that is not an operand keeps its parentheses.
func (n *node) clamp(a, b uint64) uint64 {
	x := min(a, b+1)
	y := maxU64(x, n.commit)
	return max(y*2, n.term)
}

func maxU64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// step: assign-drop on fields (=, op=, ++, index), not on locals or
// package variables; return-drop of early returns only.
func (n *node) step(i int) int {
	local := 0
	var old uint64
	old, n.commit = n.commit, uint64(i)
	local += int(old)
	n.log[i] += 2
	n.votes[i] = true
	n.term++
	if n.commit == 0 { // a single comparison: eq-flip, not if-negate too
		n.commit = 1
	}
	local++
	limit = local
	if i > len(n.log)-1 {
		return -1
	}
	inLog := i >= 0 && i < len(n.log) // a chain outside a condition
	if !inLog {
		return -2
	}
	switch {
	case i == 0 && n.term > 0:
		return 0
	}
	return local
}

// tail: a return in tail position is never removed, nor one whose removal
// leaves the function without a terminating statement.
func tail(ok bool) int {
	if ok {
		return 1
	} else {
		return 2
	}
}

func voidTail(n *node, ok bool) {
	if ok {
		n.commit = 0
		return
	}
}

// asserts: the arguments of assert and the condition of an if whose body
// only calls it are not mutated.
func (n *node) asserts(i int) {
	assert(n.commit <= n.term && i >= 0, "commit %d beyond term %d", n.commit, n.term)
	if !(n.commit == 0 || len(n.log) > 0) {
		assert(false, "commit without log")
	}
}

// literal: function literals are walked with their own tail positions.
func literal() func(int) bool {
	return func(x int) bool {
		if x-1 > 0 {
			return true
		}
		return false
	}
}

// vote: a chain operand holding a local's only use is kept evaluated, its
// value ignored; a parameter may go unused.
func (n *node) vote(t uint64, logOk bool) bool {
	fresh := t >= n.term
	return fresh && logOk
}

// kind: a return whose removal reaches an identical return at once (the
// last if's "return 0") is not mutated; the switch's "return 0" is (an if
// follows the switch), and so is "return f()", which calls.
func kind(x int, f func() int) int {
	switch {
	case x < 0:
		return 0
	case x > 10:
		return 1
	}
	if x == 5 {
		return f()
	}
	if x == 7 {
		return 0
	}
	return 0
}

// buffer: make's length is mutated, its capacity never (a capacity
// changes allocations, not results).
func buffer(n int) []int {
	return make([]int, n-1, n+1)
}
