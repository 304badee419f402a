package strong

import "testing"

func TestClamp(t *testing.T) {
	for _, c := range []struct{ x, want int }{{5, 5}, {-1, 0}, {11, 10}} {
		if got := Clamp(c.x, 0, 10); got != c.want {
			t.Errorf("Clamp(%d, 0, 10) = %d, want %d", c.x, got, c.want)
		}
	}
}

func TestCounter(t *testing.T) {
	var c Counter
	for _, s := range []struct{ d, want int }{{0, 0}, {100, 100}, {-1, -1}, {101, -1}, {1, 101}} {
		if got := c.Add(s.d); got != s.want {
			t.Fatalf("Add(%d) = %d, want %d", s.d, got, s.want)
		}
	}
	if got := c.Next(); got != 102 {
		t.Fatalf("Next() = %d, want 102", got)
	}
	c.Reset()
	if c.n != 0 || c.last != 101 {
		t.Fatalf("after Reset: n=%d last=%d, want 0 and 101", c.n, c.last)
	}
}

func TestFloor(t *testing.T) {
	if got := Floor(0, []uint64{0, 1, 2}); got != 2 {
		t.Fatalf("Floor(0, [0 1 2]) = %d, want 2", got)
	}
}
