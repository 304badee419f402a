package wal

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

func openManual(t testing.TB) (*vfs.MemFS, *WAL) {
	t.Helper()
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, fs, manual(smallOptions()))
	t.Cleanup(func() { _ = w.Close() })
	return fs, w
}

func TestAppendValidation(t *testing.T) {
	_, w := openManual(t)
	mustAppend(t, w, entries(1, 3, 2))
	big := make([]byte, 601)
	for name, tc := range map[string]struct {
		ents []Entry
		want error
	}{
		"gap":           {[]Entry{{Index: 5, Term: 2}}, ErrNonContiguous},
		"overlap":       {[]Entry{{Index: 3, Term: 2}}, ErrNonContiguous},
		"inner gap":     {[]Entry{{Index: 4, Term: 2}, {Index: 6, Term: 2}}, ErrNonContiguous},
		"term zero":     {[]Entry{{Index: 4, Term: 0}}, ErrInvalid},
		"term regress":  {[]Entry{{Index: 4, Term: 1}}, ErrInvalid},
		"inner regress": {[]Entry{{Index: 4, Term: 3}, {Index: 5, Term: 2}}, ErrInvalid},
		"too large":     {[]Entry{{Index: 4, Term: 2, Data: big}}, ErrInvalid},
	} {
		if err := w.Append(tc.ents); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if w.LastIndex() != 3 {
		t.Fatalf("a rejected append changed the log: last %d", w.LastIndex())
	}
	if err := w.Append(nil); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, entries(4, 2, 2))
}

func TestEntriesValidation(t *testing.T) {
	_, w := openManual(t)
	mustAppend(t, w, entries(1, 10, 1))
	w.flushOnce()
	for name, tc := range map[string]struct {
		lo, hi uint64
		want   error
	}{
		"lo > hi":        {5, 4, ErrOutOfRange},
		"beyond last":    {5, 12, ErrOutOfRange},
		"way beyond":     {1, 1 << 62, ErrOutOfRange},
		"zero":           {0, 3, ErrCompacted},
		"below first":    {0, 0, ErrCompacted},
		"empty at end":   {11, 11, nil},
		"empty in range": {4, 4, nil},
	} {
		ents, err := w.Entries(tc.lo, tc.hi, 1<<20)
		if !errors.Is(err, tc.want) || (err == nil && len(ents) != 0) {
			t.Errorf("%s: %d entries, err %v, want %v", name, len(ents), err, tc.want)
		}
	}
	// maxBytes: at least one entry, then stop before passing the bound.
	size := uint64(recordHeaderBytes + 40)
	for _, tc := range []struct{ maxBytes, want uint64 }{{0, 1}, {size - 1, 1}, {size, 1}, {3 * size, 3}, {3*size + 1, 3}, {1 << 40, 10}} {
		ents := mustEntriesMax(t, w, 1, 11, tc.maxBytes)
		if uint64(len(ents)) != tc.want {
			t.Errorf("maxBytes %d: %d entries, want %d", tc.maxBytes, len(ents), tc.want)
		}
	}
	if _, err := w.Term(11); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("term beyond: %v", err)
	}
	if term, err := w.Term(0); err != nil || term != 0 {
		t.Errorf("term of the watermark: %d %v", term, err)
	}
}

func mustEntriesMax(t *testing.T, w *WAL, lo, hi, maxBytes uint64) []Entry {
	t.Helper()
	ents, err := w.Entries(lo, hi, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	return ents
}

// Suffix truncation clamps the durable index and never moves the compaction watermark
// (seed 002); prefix compaction drops whole segments and never passes the durable index.
func TestTruncateAndCompactAreDistinct(t *testing.T) {
	_, w := openManual(t)
	fill(t, w, 40)
	if err := w.CompactPrefix(41); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("compact beyond durable: %v", err)
	}
	if err := w.CompactPrefix(20); err != nil {
		t.Fatal(err)
	}
	first := w.FirstIndex()
	if first == 1 || first > 21 {
		t.Fatalf("first index %d after compacting through 20", first)
	}
	if _, err := w.Entries(first-1, first, 1<<20); !errors.Is(err, ErrCompacted) {
		t.Fatalf("entries below the watermark: %v", err)
	}
	if _, err := w.Term(first - 1); err != nil {
		t.Fatalf("term at the watermark: %v", err)
	}
	for name, tc := range map[string]struct {
		from uint64
		want error
	}{
		"below watermark": {first - 1, ErrCompacted},
		"beyond last+1":   {42, ErrOutOfRange},
		"at last+1":       {41, nil},
	} {
		if err := w.TruncateSuffix(tc.from); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if err := w.TruncateSuffix(30); err != nil {
		t.Fatal(err)
	}
	if w.DurableIndex() != 29 || w.LastIndex() != 29 || w.FirstIndex() != first {
		t.Fatalf("after truncate: durable %d last %d first %d (was %d)", w.DurableIndex(), w.LastIndex(), w.FirstIndex(), first)
	}
	if err := w.TruncateSuffix(first); err != nil { // everything after the watermark
		t.Fatal(err)
	}
	if w.FirstIndex() != first || w.LastIndex() != first-1 {
		t.Fatalf("truncate to the watermark moved it: first %d last %d", w.FirstIndex(), w.LastIndex())
	}
	w.flushOnce()
	mustAppend(t, w, entries(first, 2, 3))
	w.flushOnce()
	if got := mustEntries(t, w, first, first+2); got[0].Term != 3 {
		t.Fatalf("entry after truncation: %+v", got[0])
	}
}

// A truncation reaches the disk before anything appended after it is reported durable,
// and stale records never come back: not after a crash, not after a clean reopen.
func TestTruncationIsDurableBeforeNewAppends(t *testing.T) {
	for seed := range uint64(40) {
		for _, appendAfter := range []bool{true, false} {
			fs := vfs.NewMemFS(vfs.MemConfig{Seed: seed})
			opts := manual(smallOptions())
			w, _ := mustOpen(t, fs, opts)
			fill(t, w, 24)
			from := uint64(5 + seed%15)
			if err := w.TruncateSuffix(from); err != nil {
				t.Fatal(err)
			}
			want := from - 1
			if appendAfter {
				mustAppend(t, w, entries(from, 3, 2))
				want = from + 2
			}
			if err := w.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			if w.DurableIndex() != want {
				t.Fatalf("durable %d, want %d", w.DurableIndex(), want)
			}
			fs.Crash()
			_ = w.Close()
			fs.Restart()
			w, rec := mustOpen(t, fs, opts)
			if rec.Verdict == Truncated || rec.IndexLast != want {
				t.Fatalf("seed %d: recovery %+v, want last %d", seed, rec, want)
			}
			for _, e := range mustEntries(t, w, from, want+1) {
				if e.Term != 2 {
					t.Fatalf("seed %d: stale entry %d term %d came back", seed, e.Index, e.Term)
				}
			}
			_ = w.Close()
		}
	}
}

// Waiters learn when the entry they wait for is removed, and the index now holds
// another entry.
func TestWaitDurableTruncatedAndReset(t *testing.T) {
	_, w := openManual(t)
	mustAppend(t, w, entries(1, 5, 1))
	if err := w.WaitDurable(context.Background(), 6); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("wait beyond last: %v", err)
	}
	done := make(chan error, 2)
	go func() { done <- w.WaitDurable(context.Background(), 5) }()
	go func() { done <- w.WaitDurable(context.Background(), 2) }()
	waitWaiters(t, w, 2)
	if err := w.TruncateSuffix(4); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrTruncated) {
		t.Fatalf("waiter for a truncated entry: %v", err)
	}
	mustAppend(t, w, entries(4, 2, 2))
	w.flushOnce()
	if err := <-done; err != nil {
		t.Fatalf("waiter for a surviving entry: %v", err)
	}
	mustAppend(t, w, entries(6, 1, 2))
	go func() { done <- w.WaitDurable(context.Background(), 6) }()
	waitWaiters(t, w, 1)
	if err := w.Reset(100, 3); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrTruncated) {
		t.Fatalf("waiter across a reset: %v", err)
	}
}

// waitWaiters spins until n WaitDurable calls are registered (a condition, not a sleep).
func waitWaiters(t *testing.T, w *WAL, n int) {
	t.Helper()
	ctx := testCtx(t)
	for ctx.Err() == nil {
		w.mu.Lock()
		got := len(w.waiters)
		w.mu.Unlock()
		if got >= n {
			return
		}
		waitYield()
	}
	t.Fatal("waiters never registered")
}

func TestReset(t *testing.T) {
	fs, w := openManual(t)
	fill(t, w, 10)
	if err := w.Reset(5, 1); !errors.Is(err, nil) {
		t.Fatal(err)
	}
	if err := w.CompactPrefix(3); err != nil {
		t.Fatal(err)
	}
	if err := w.Reset(100, 4); err != nil {
		t.Fatal(err)
	}
	if w.FirstIndex() != 101 || w.LastIndex() != 100 {
		t.Fatalf("after reset: first %d last %d", w.FirstIndex(), w.LastIndex())
	}
	if term, _ := w.Term(100); term != 4 {
		t.Fatalf("term at the reset point %d", term)
	}
	if err := w.Reset(50, 4); !errors.Is(err, ErrCompacted) {
		t.Fatalf("reset backwards: %v", err)
	}
	mustAppend(t, w, entries(101, 3, 4))
	w.flushOnce()
	if w.DurableIndex() != 103 {
		t.Fatalf("durable %d", w.DurableIndex())
	}
	_ = w.Close()
	w, rec := mustOpen(t, fs, manual(smallOptions()))
	defer w.Close()
	if rec.Verdict != Clean || rec.IndexFirst != 101 || rec.IndexLast != 103 {
		t.Fatalf("reopen after reset: %+v", rec)
	}
	if n := len(listFiles(t, fs, prefixSegment)); n != 1 {
		t.Fatalf("%d segment files after a reset, want 1", n)
	}
}

func TestClosed(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, fs, smallOptions())
	mustAppend(t, w, entries(1, 3, 1))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	if err := w.Append(entries(4, 1, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := w.Entries(1, 2, 100); !errors.Is(err, ErrClosed) {
		t.Fatalf("entries after close: %v", err)
	}
	if err := w.WaitDurable(context.Background(), 3); err != nil {
		t.Fatalf("close flushed, so 3 is durable: %v", err)
	}
	if err := w.Sync(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("sync after close: %v", err)
	}
	w, rec := mustOpen(t, fs, smallOptions())
	defer w.Close()
	if rec.IndexLast != 3 || rec.Verdict != Clean {
		t.Fatalf("reopen: %+v", rec)
	}
}

// Two owners never write one log: while a WAL is open its directory cannot be opened
// again, in this process or another (flock on the real disk); Close and a crash (the
// owner's death) release the lock.
func TestOpenLocksDirectory(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   vfs.FS
		dir  string
	}{
		{"os", vfs.OS{}, filepath.Join(t.TempDir(), "wal")},
		{"mem", vfs.NewMemFS(vfs.MemConfig{Seed: 1}), testDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := smallOptions()
			w, _, err := Open(tc.fs, tc.dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := Open(tc.fs, tc.dir, opts); !errors.Is(err, ErrLocked) || !errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("second open of an open log: got %v, want ErrLocked", err)
			}
			mustAppend(t, w, entries(1, 2, 1))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			w, rec, err := Open(tc.fs, tc.dir, opts)
			if err != nil {
				t.Fatalf("reopen after close: %v", err)
			}
			if rec.IndexLast != 2 {
				t.Fatalf("reopen: %+v", rec)
			}
			if m, ok := tc.fs.(*vfs.MemFS); ok {
				m.Crash()
				m.Restart()
				w, _, err = Open(tc.fs, tc.dir, opts)
				if err != nil {
					t.Fatalf("reopen after the owner crashed: %v", err)
				}
			}
			if err := w.Close(); err != nil && !errors.Is(err, ErrFailed) {
				t.Fatal(err)
			}
		})
	}
}

// An Open that fails after taking the lock releases it.
func TestFailedOpenReleasesLock(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	fs.SetCapacity(1) // zero means unlimited
	if _, _, err := Open(fs, testDir, smallOptions()); err == nil || errors.Is(err, ErrLocked) {
		t.Fatalf("open of a new log on a full disk: got %v, want an I/O error", err)
	}
	fs.SetCapacity(0)
	w, _ := mustOpen(t, fs, smallOptions())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsValidation(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	for _, o := range []Options{
		{BlockBytes: 1000},
		{BlockBytes: 256},
		{SegmentBytes: 4096 + 512, BlockBytes: 1024},
		{SegmentBytes: 1024, BlockBytes: 512},
		{SegmentBytes: 4096, BlockBytes: 512, EntryBytesMax: 4096},
		{SyncDelay: -1},
		{BlockBytes: 2 << 20, SegmentBytes: 16 << 20}, // a power of two above blockBytesMax
	} {
		if _, _, err := Open(fs, testDir, o); !errors.Is(err, ErrInvalid) {
			t.Errorf("options %+v: %v, want ErrInvalid", o, err)
		}
	}
}

// A reused segment file keeps the valid batches of its earlier life behind the new
// ones; the generation tells them apart, so recovery ends CLEAN at the new end and
// never takes an old record.
func TestRecycledSegmentsNeverServeStaleRecords(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	opts := manual(smallOptions())
	w, _ := mustOpen(t, fs, opts)
	fill(t, w, 60)
	if err := w.CompactPrefix(55); err != nil {
		t.Fatal(err)
	}
	if len(listFiles(t, fs, prefixFree)) == 0 {
		t.Fatal("no file kept for reuse")
	}
	// The stepped WAL's preparer made a fresh spare while the log grew; rotation takes a
	// spare before a free file. Drop it, so that the next segment is a reused file.
	w.ioMu.Lock()
	for _, name := range w.spares {
		if err := fs.Remove(segPath(name)); err != nil {
			t.Fatal(err)
		}
	}
	w.spares = nil
	w.ioMu.Unlock()
	for i := uint64(61); i <= 64; i++ { // a few small batches into a reused file
		mustAppend(t, w, []Entry{{Index: i, Term: 2, Data: []byte("new")}})
		w.flushOnce()
	}
	fs.Crash() // no seal: recovery must find the end among the stale batches
	_ = w.Close()
	fs.Restart()
	w, rec := mustOpen(t, fs, opts)
	defer w.Close()
	if rec.Verdict != Clean || rec.IndexLast != 64 {
		t.Fatalf("recovery %+v, want CLEAN at 64", rec)
	}
	// Behind the end lie valid batches of the file's earlier life.
	img, err := fs.ReadFile(segPath(rec.StopSegment))
	if err != nil {
		t.Fatal(err)
	}
	gen, _ := segmentHeaderOf(t, img)
	stale := 0
	for off := rec.StopOffset; off+batchHeaderBytes <= int64(len(img)); off += 512 {
		if h, st := decodeBatchHeader(img[off:]); st == headerValid && h.generation < gen {
			stale++
		}
	}
	if stale == 0 {
		t.Fatal("no stale batch behind the end: the test does not test reuse")
	}
	for _, e := range mustEntries(t, w, 61, 65) {
		if string(e.Data) != "new" {
			t.Fatalf("entry %d: %q", e.Index, e.Data)
		}
	}
}

func segmentHeaderOf(t *testing.T, img []byte) (uint64, segmentHeader) {
	t.Helper()
	h, err := decodeSegmentHeader(img)
	if err != nil {
		t.Fatal(err)
	}
	return h.generation, h
}
