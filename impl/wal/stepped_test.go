package wal

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// In stepped mode nothing reaches the disk until the caller steps.
func TestSteppedNoIOWithoutStep(t *testing.T) {
	fs, w := openManual(t)
	ops := fs.Ops()
	mustAppend(t, w, entries(1, 3, 1))
	if _, err := w.SubmitHardState(HardState{Term: 1, Vote: 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.TruncateSuffix(3); err != nil {
		t.Fatal(err)
	}
	w.SubmitSync()
	if fs.Ops() != ops || w.Progress().DurableIndex != 0 {
		t.Fatalf("%d disk operations without a step", fs.Ops()-ops)
	}
	if k := w.NextStep(); k != StepWrite {
		t.Fatalf("next step %s", k)
	}
	steps(t, w)
	if p := w.Progress(); p.DurableIndex != 2 || p.HardState.Vote != 1 || fs.Ops() == ops {
		t.Fatalf("after the steps: %+v", p)
	}
}

// SyncDelay and SealDelay run on the injected clock, and NextDeadline says when the
// next step becomes due.
func TestSteppedDeadlines(t *testing.T) {
	clock := newFakeClock()
	opts := manual(smallOptions())
	opts.Clock, opts.SyncDelay, opts.SealDelay = clock, 10*time.Millisecond, 5*time.Millisecond
	w, _ := mustOpen(t, vfs.NewMemFS(vfs.MemConfig{Seed: 1}), opts)
	defer w.Close()
	if _, ok := w.NextDeadline(); ok {
		t.Fatal("a deadline with nothing to do")
	}
	t0 := clock.Now()
	mustAppend(t, w, entries(1, 2, 1))
	if k := w.NextStep(); k != StepNone {
		t.Fatalf("next step %s inside SyncDelay", k)
	}
	if d, ok := w.NextDeadline(); !ok || !d.Equal(t0.Add(10*time.Millisecond)) {
		t.Fatalf("deadline %v %v, want the end of SyncDelay", d, ok)
	}
	clock.Advance(9 * time.Millisecond)
	mustAppend(t, w, entries(3, 1, 1)) // joins the batch; the window does not restart
	if k := w.NextStep(); k != StepNone {
		t.Fatalf("next step %s inside SyncDelay", k)
	}
	clock.Advance(time.Millisecond)
	if got := steps(t, w); !slices.Equal(got, []StepKind{StepWrite, StepSync, StepPublish}) {
		t.Fatalf("steps %v", got)
	}
	published := clock.Now()
	if d, ok := w.NextDeadline(); !ok || !d.Equal(published.Add(5*time.Millisecond)) {
		t.Fatalf("deadline %v %v, want the end of SealDelay", d, ok)
	}
	clock.Advance(5 * time.Millisecond)
	if got := steps(t, w); !slices.Equal(got, []StepKind{StepSeal, StepSync}) {
		t.Fatalf("steps %v, want a seal and its fdatasync", got)
	}
	if _, ok := w.NextDeadline(); ok {
		t.Fatal("a deadline after the seal")
	}
	// SubmitSync skips SyncDelay.
	mustAppend(t, w, entries(4, 1, 1))
	if w.NextStep() != StepNone {
		t.Fatal("not gathering")
	}
	w.SubmitSync()
	if k := w.NextStep(); k != StepWrite {
		t.Fatalf("next step %s after SubmitSync", k)
	}
}

// A cycle that rotates: the new segment starts in the write phase after the fdatasync
// of the full one, and a spare is prepared once the active segment is half full.
func TestSteppedRotationAndPrepare(t *testing.T) {
	fs, w := openManual(t)
	var kinds []StepKind
	for w.LastIndex() < 12 {
		mustAppend(t, w, entries(w.LastIndex()+1, 2, 1))
		w.SubmitSync()
		kinds = append(kinds, steps(t, w)...)
	}
	if !slices.Contains(kinds, StepPrepare) || len(listFiles(t, fs, prefixSpare)) != 1 {
		t.Fatalf("no spare prepared: steps %v, files %v", kinds, listFiles(t, fs, ""))
	}
	// One cycle bigger than the room left: write, sync, write (rotation), sync, publish.
	big := make([]Entry, 8)
	for i := range big {
		idx := w.LastIndex() + 1 + uint64(i)
		big[i] = Entry{Index: idx, Term: 1, Data: payload(idx, 1, 0, 300)}
	}
	mustAppend(t, w, big)
	w.SubmitSync()
	segsBefore, spare := len(listFiles(t, fs, prefixSegment)), listFiles(t, fs, prefixSpare)[0]
	want := []StepKind{StepWrite, StepSync, StepWrite, StepSync, StepPublish}
	if got := steps(t, w); !slices.Equal(got[:min(len(got), 5)], want) {
		t.Fatalf("steps %v, want %v first", got, want)
	}
	if n := len(listFiles(t, fs, prefixSegment)); n != segsBefore+1 || slices.Contains(listFiles(t, fs, prefixSpare), spare) {
		t.Fatalf("segments %d (was %d), spares %v: the rotation did not take %s", n, segsBefore, listFiles(t, fs, prefixSpare), spare)
	}
}

// The same seed and the same calls give the same disk, byte for byte: a seeded random
// sequence of submissions, steps, time passing and a crash, run twice (once with
// GOMAXPROCS 1), gives one digest; another seed gives another.
func TestSteppedDeterministic(t *testing.T) {
	run := func(seed uint64) (string, string) {
		fs := vfs.NewMemFS(vfs.MemConfig{Seed: seed})
		fs.CrashAtOp(150 + seed%50)
		m := newModel()
		opts := crashOptions(seed, 0)
		var trace []string
		w, crashed := life(t, fs, m, newRand(seed), 300, opts)
		if w != nil {
			_ = w.Close()
		}
		trace = append(trace, fmt.Sprintf("%v %+v", crashed, m.hsAcked))
		fs.CrashAtOp(0)
		fs.Restart()
		w, rec := mustOpen(t, fs, opts)
		trace = append(trace, fmt.Sprintf("%s %s %d %d", rec.Verdict, rec.Case, rec.IndexLast, fs.Ops()))
		m.check(t, w, rec, "after the crash")
		m.resync(t, w, rec)
		rng := newRand(seed + 1)
		for range 100 {
			if err := m.step(t, rng, w); err != nil {
				t.Fatal(err)
			}
		}
		_ = w.Close()
		return fs.Digest(), strings.Join(trace, "; ")
	}
	for seed := range uint64(4) {
		d1, tr1 := run(seed)
		prev := runtime.GOMAXPROCS(1)
		d2, tr2 := run(seed)
		runtime.GOMAXPROCS(prev)
		if d1 != d2 || tr1 != tr2 {
			t.Fatalf("seed %d: two runs differ: %s (%s) and %s (%s)", seed, d1, tr1, d2, tr2)
		}
		if d3, _ := run(seed + 100); d3 == d1 {
			t.Fatalf("seed %d and %d give the same disk: the digest does not see the runs", seed, seed+100)
		}
	}
}

// Step refuses to run on a closed WAL and returns the failure of a failed one.
func TestSteppedStepErrors(t *testing.T) {
	fs, w := openManual(t)
	mustAppend(t, w, entries(1, 2, 1))
	if err := fs.FailSync(activeSegmentPath(w)); err != nil {
		t.Fatal(err)
	}
	var err error
	for err == nil && w.NextStep() != StepNone {
		err = w.Step()
	}
	if !errors.Is(err, ErrFailed) || !errors.Is(w.Step(), ErrFailed) || w.NextStep() != StepNone {
		t.Fatalf("step after an fdatasync EIO: %v", err)
	}
	fs2, w2 := openManual(t)
	_ = fs2
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w2.Step(); !errors.Is(err, ErrClosed) {
		t.Fatalf("step after close: %v", err)
	}
}
