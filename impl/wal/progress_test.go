package wal

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// Tickets are one counter over all submissions; Synced covers a ticket only once
// everything up to it is durable, and Progress reads the durable index, its term,
// Synced and the hard state in one snapshot.
func TestProgressTickets(t *testing.T) {
	_, w := openManual(t)
	if p := w.Progress(); p != (Progress{}) {
		t.Fatalf("progress of a new log %+v", p)
	}
	mustAppend(t, w, entries(1, 3, 2))
	t1 := w.SubmitSync()
	if p := w.Progress(); p.Synced >= t1 || p.DurableIndex != 0 {
		t.Fatalf("progress %+v before any step, ticket %d", p, t1)
	}
	ch := w.Notify()
	if got := steps(t, w); !slices.Equal(got, []StepKind{StepWrite, StepSync, StepPublish}) {
		t.Fatalf("steps %v", got)
	}
	<-ch
	if p := w.Progress(); p.Synced < t1 || p.DurableIndex != 3 || p.DurableTerm != 2 || p.Err != nil {
		t.Fatalf("progress %+v after the cycle, ticket %d", p, t1)
	}
	// A submission with nothing to do is covered at once when nothing is in flight.
	t2 := w.SubmitSync()
	if t2 != t1+1 || w.Progress().Synced != t2 {
		t.Fatalf("idle SubmitSync: ticket %d after %d, synced %d", t2, t1, w.Progress().Synced)
	}
	t3, err := w.SubmitCompact(0)
	if err != nil || t3 != t2+1 || w.Progress().Synced != t3 {
		t.Fatalf("compaction with nothing to drop: ticket %d err %v synced %d", t3, err, w.Progress().Synced)
	}
}

// The durable index and its term come from one snapshot: after a truncation and an
// append at the durable index, the pair is the durable entry's, never the new one's.
// With DurableIndex() and Term() read apart, a caller sees (3, term 5): an entry
// that is not durable.
func TestProgressDurableTermAcrossTruncation(t *testing.T) {
	_, w := openManual(t)
	mustAppend(t, w, entries(1, 3, 2))
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := w.DurableIndex()
	if err := w.TruncateSuffix(3); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, entries(3, 1, 5))
	if term, _ := w.Term(d); d != 3 || term != 5 {
		t.Fatalf("the two-call read: durable %d, term %d there now", d, term)
	}
	if p := w.Progress(); p.DurableIndex != 2 || p.DurableTerm != 2 {
		t.Fatalf("progress %+v, want durable 2 at term 2", p)
	}
	steps(t, w)
	if p := w.Progress(); p.DurableIndex != 3 || p.DurableTerm != 5 {
		t.Fatalf("progress %+v after the flush, want durable 3 at term 5", p)
	}
	// A reset below the durable index: the term is the one the old log has on disk
	// there until the reset is durable, then the snapshot's.
	if err := w.Reset(2, 7); err != nil {
		t.Fatal(err)
	}
	if p := w.Progress(); p.DurableIndex != 2 || p.DurableTerm != 2 {
		t.Fatalf("progress %+v after a reset to (2, 7), want durable 2 at the old term 2", p)
	}
	steps(t, w)
	if p := w.Progress(); p.DurableIndex != 2 || p.DurableTerm != 7 {
		t.Fatalf("progress %+v after the reset is durable, want (2, 7)", p)
	}
}

// SubmitHardState validates at once and does not block; the hard state is written in
// the pipeline, in order with the log: a batch submitted after it goes out only once
// its first slot is synced, and Progress shows it only once both are.
func TestSubmitHardState(t *testing.T) {
	_, w := openManual(t)
	hs := HardState{Term: 3, Vote: 1}
	th, err := w.SubmitHardState(hs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.SubmitHardState(HardState{Term: 3, Vote: 2}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("vote changed within the submitted term: %v", err)
	}
	if _, err := w.SubmitHardState(HardState{Term: 2}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("term below the submitted one: %v", err)
	}
	mustAppend(t, w, entries(1, 2, 3))
	ta := w.SubmitSync()
	if p := w.Progress(); p.HardState != (HardState{}) || p.Synced >= th {
		t.Fatalf("progress %+v before any step", p)
	}
	batches := w.Stats().Batches
	for i, want := range []StepKind{StepWrite, StepSync} { // slot A, its fdatasync
		if k := w.NextStep(); k != want {
			t.Fatalf("step %d is %s, want %s", i, k, want)
		}
		if err := w.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if w.Stats().Batches != batches {
		t.Fatal("a batch submitted after the hard state was written before the hard state was recoverable")
	}
	if got := steps(t, w); !slices.Equal(got, []StepKind{StepWrite, StepSync, StepPublish}) { // slot B and the batch
		t.Fatalf("steps %v", got)
	}
	if p := w.Progress(); p.HardState != hs || p.Synced < ta || p.DurableIndex != 2 || w.HardState() != hs {
		t.Fatalf("progress %+v", p)
	}
	// An equal hard state queues nothing.
	if t2, err := w.SubmitHardState(hs); err != nil || w.Progress().Synced != t2 || w.NextStep() != StepNone {
		t.Fatalf("equal hard state: %d %v, synced %d, next %s", t2, err, w.Progress().Synced, w.NextStep())
	}
}

// A truncation whose pending marker a later truncation replaced is covered only when
// the later one is durable (a bug found while writing the stepped WAL: the dropped
// marker's ticket was covered at once).
func TestSupersededTruncationTicket(t *testing.T) {
	_, w := openManual(t)
	mustAppend(t, w, entries(1, 20, 1))
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.TruncateSuffix(12); err != nil {
		t.Fatal(err)
	}
	t1 := w.SubmitSync()
	if err := w.TruncateSuffix(10); err != nil {
		t.Fatal(err)
	}
	if p := w.Progress(); p.Synced >= t1 {
		t.Fatalf("synced %d covers the first truncation (ticket %d) before any truncation is on disk", p.Synced, t1)
	}
	t2 := w.SubmitSync()
	steps(t, w)
	if p := w.Progress(); p.Synced < t2 || p.DurableIndex != 9 {
		t.Fatalf("progress %+v after the flush", p)
	}
}

// SubmitCompact moves the watermark at once and releases the files in the pipeline.
func TestSubmitCompact(t *testing.T) {
	fs, w := openManual(t)
	fill(t, w, 40)
	segsBefore := len(listFiles(t, fs, prefixSegment))
	tc, err := w.SubmitCompact(30)
	if err != nil {
		t.Fatal(err)
	}
	if w.FirstIndex() == 1 {
		t.Fatal("the watermark did not move at once")
	}
	if n := len(listFiles(t, fs, prefixSegment)); n != segsBefore || w.Progress().Synced >= tc {
		t.Fatalf("released before any step: %d segment files (was %d), synced %d, ticket %d", n, segsBefore, w.Progress().Synced, tc)
	}
	steps(t, w)
	if n := len(listFiles(t, fs, prefixSegment)); n >= segsBefore || w.Progress().Synced < tc {
		t.Fatalf("after the steps: %d segment files (was %d), synced %d, ticket %d", n, segsBefore, w.Progress().Synced, tc)
	}
	if _, err := w.SubmitCompact(41); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("compaction beyond the durable index: %v", err)
	}
}

// With the flusher goroutine: the submissions do not block, Notify wakes a waiter for
// each change, and the tickets are covered.
func TestSubmitWithFlusher(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, fs, smallOptions())
	defer w.Close()
	ctx := testCtx(t)
	hs := HardState{Term: 2, Vote: 3, Commit: 1}
	if _, err := w.SubmitHardState(hs); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, entries(1, 5, 2))
	ticket := w.SubmitSync()
	for {
		ch := w.Notify()
		p := w.Progress()
		if p.Synced >= ticket {
			if p.HardState != hs || p.DurableIndex != 5 || p.DurableTerm != 2 {
				t.Fatalf("progress %+v", p)
			}
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("ticket %d never covered: %+v", ticket, p)
		}
	}
	if err := w.Step(); !errors.Is(err, ErrInvalid) || w.NextStep() != StepNone {
		t.Fatalf("Step on a WAL with goroutines: %v", err)
	}
}
