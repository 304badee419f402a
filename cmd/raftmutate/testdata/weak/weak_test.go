package weak

import "testing"

// TestInRange tries points well inside and well outside, never a boundary.
func TestInRange(t *testing.T) {
	for _, c := range []struct {
		x    int
		want bool
	}{{1, true}, {5, false}, {-5, false}} {
		if got := InRange(c.x, 0, 3); got != c.want {
			t.Errorf("InRange(%d, 0, 3) = %v, want %v", c.x, got, c.want)
		}
	}
}
