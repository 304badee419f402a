// Package strong is raftmutate's fixture whose tests kill every mutant.
package strong

// Clamp returns x limited to [lo, hi].
func Clamp(x, lo, hi int) int {
	return max(lo, min(x, hi))
}

// Counter counts up in steps of at most 100.
type Counter struct{ n, last int }

// Add adds d, between 0 and 100, and returns the count; -1 for another d.
func (c *Counter) Add(d int) int {
	if d < 0 || d > 100 {
		return -1
	}
	c.n += d
	return c.n
}

// Next is the count after one more.
func (c *Counter) Next() int { return c.n + 1 }

// Reset sets the count to zero and remembers the old one.
func (c *Counter) Reset() {
	old := c.n
	c.n = 0
	c.last = old
}

// Floor counts the terms of ts at or above x, and at least 1.
func Floor(x uint64, ts []uint64) int {
	lo := max(x, 1)
	n := 0
	for _, t := range ts {
		if t >= lo {
			n++
		}
	}
	return n
}
