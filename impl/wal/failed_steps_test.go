package wal

import (
	"errors"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// A failed WAL has no step due and no deadline: NextDeadline must not send
// a stepped driver back for a seal that can never be written, even though
// the last batch written is unvouched and SealDelay is set.
func TestSteppedFailedHasNoDeadline(t *testing.T) {
	clock := newFakeClock()
	opts := manual(smallOptions())
	opts.Clock, opts.SealDelay = clock, 5*time.Millisecond
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, fs, opts)
	defer w.Close()
	mustAppend(t, w, entries(1, 2, 1))
	steps(t, w)
	if _, ok := w.NextDeadline(); !ok {
		t.Fatal("no seal deadline after a batch with records")
	}
	if err := fs.FailSync(activeSegmentPath(w)); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, entries(3, 1, 1))
	for i := 0; i < 10 && !w.Failed(); i++ {
		if err := w.Step(); err != nil && !errors.Is(err, ErrFailed) {
			t.Fatalf("step: %v", err)
		}
	}
	if !w.Failed() {
		t.Fatal("the failed fdatasync did not fail the WAL")
	}
	if k := w.NextStep(); k != StepNone {
		t.Errorf("next step %s on a failed WAL", k)
	}
	if d, ok := w.NextDeadline(); ok {
		t.Errorf("deadline %v on a failed WAL, want none", d)
	}
	clock.Advance(time.Second)
	if k := w.NextStep(); k != StepNone {
		t.Errorf("next step %s on a failed WAL after SealDelay", k)
	}
}
