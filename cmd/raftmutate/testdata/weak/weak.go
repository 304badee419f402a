// Package weak is raftmutate's fixture whose test misses the boundaries.
package weak

// InRange says whether lo <= x < hi.
func InRange(x, lo, hi int) bool {
	return lo <= x && x < hi
}
