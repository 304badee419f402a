// Package cover is raftmutate's fixture for test selection by coverage.
package cover

// Sign is covered by TestSign only, through a switch's case list (a case
// list is in no coverage block: its mutants are anchored at the switch).
func Sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// Twice is covered by TestTwice only, inside a function literal.
func Twice(x int) int {
	f := func(y int) int {
		if y > 0 {
			return y + y
		}
		return 0
	}
	return f(x)
}

// Unused is covered by no test: its mutants survive without a run.
func Unused(x int) bool {
	return x > 3
}
