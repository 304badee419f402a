package marks

import (
	"sync"
	"testing"
)

func TestHitCountsOnlyWhenEnabled(t *testing.T) {
	m := New("markstest/hit", "a test mark")
	defer delete(registry, m.name)
	Enable(false)
	m.Hit()
	if m.Count() != 0 {
		t.Fatalf("counted %d with counting off", m.Count())
	}
	Enable(true)
	defer Enable(false)
	var wg sync.WaitGroup
	for k := 0; k < 8; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				m.Hit()
			}
		}()
	}
	wg.Wait()
	if got := Snapshot()["markstest/hit"]; got != 8000 {
		t.Fatalf("count %d, want 8000", got)
	}
	Reset()
	if m.Count() != 0 {
		t.Fatal("Reset left a count")
	}
}

func TestNewRefusesBadAndRepeatedNames(t *testing.T) {
	for _, name := range []string{"", "nopackage", "/x", "x/", "Raft/x", "raft/x y", "raft/x_y"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%q) did not panic", name)
				}
			}()
			New(name, "")
		}()
	}
	m := New("markstest/once", "")
	defer delete(registry, m.name)
	defer func() {
		if recover() == nil {
			t.Error("a second New of a name did not panic")
		}
	}()
	New("markstest/once", "")
}

func TestHitDoesNotAllocate(t *testing.T) {
	m := New("markstest/alloc", "")
	defer delete(registry, m.name)
	for _, on := range []bool{false, true} {
		Enable(on)
		if n := testing.AllocsPerRun(100, m.Hit); n != 0 {
			t.Errorf("Hit allocates %v times with counting %v", n, on)
		}
	}
	Enable(false)
}

func BenchmarkHitDisabled(b *testing.B) {
	m := New("markstest/bench-off", "")
	defer delete(registry, m.name)
	Enable(false)
	for i := 0; i < b.N; i++ {
		m.Hit()
	}
}

func BenchmarkHitEnabled(b *testing.B) {
	m := New("markstest/bench-on", "")
	defer delete(registry, m.name)
	Enable(true)
	defer Enable(false)
	for i := 0; i < b.N; i++ {
		m.Hit()
	}
}
