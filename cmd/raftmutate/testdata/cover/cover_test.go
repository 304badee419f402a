package cover

import "testing"

func TestSign(t *testing.T) {
	for x, want := range map[int]int{-2: -1, 0: 0, 2: 1} {
		if got := Sign(x); got != want {
			t.Errorf("Sign(%d) = %d, want %d", x, got, want)
		}
	}
}

func TestTwice(t *testing.T) {
	if got := Twice(3); got != 6 {
		t.Errorf("Twice(3) = %d, want 6", got)
	}
}
