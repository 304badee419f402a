package wal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

func activeSegmentPath(w *WAL) string {
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	return segPath(w.active.name)
}

// testCtx bounds a wait that must end, so that a lost wakeup fails the test instead of
// hanging it.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// An fdatasync EIO: the durable index stops, the WAL fails loudly and stays failed,
// nothing after is reported durable, the process does not panic, and recovery finds
// everything that was reported durable.
func TestSyncEIOFailsLoudly(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 3})
	sink := &logSink{}
	opts := smallOptions()
	opts.Logger = sink.logger()
	w, _ := mustOpen(t, fs, opts)
	ctx := testCtx(t)
	mustAppend(t, w, entries(1, 5, 1))
	if err := w.WaitDurable(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if err := fs.FailSync(activeSegmentPath(w)); err != nil {
		t.Fatal(err)
	}
	ch := w.DurableNotify()
	mustAppend(t, w, entries(6, 5, 1))
	err := w.WaitDurable(ctx, 10)
	if !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("wait after EIO: %v, want ErrFailed wrapping EIO", err)
	}
	<-ch // failure wakes DurableNotify too
	if d := w.DurableIndex(); d != 5 {
		t.Fatalf("durable index %d after EIO, want 5", d)
	}
	if !w.Failed() || !errors.Is(w.Err(), ErrFailed) {
		t.Fatalf("Err %v", w.Err())
	}
	if !strings.Contains(sink.String(), "FAILED") || !strings.Contains(sink.String(), "input/output error") {
		t.Fatalf("no loud log line: %s", sink.String())
	}
	for name, err := range map[string]error{
		"append":       w.Append(entries(11, 1, 1)),
		"sethardstate": w.SetHardState(HardState{Term: 9}),
		"sync":         w.Sync(ctx),
		"truncate":     w.TruncateSuffix(3),
		"compact":      w.CompactPrefix(2),
	} {
		if !errors.Is(err, ErrFailed) {
			t.Errorf("%s on a failed WAL: %v, want ErrFailed", name, err)
		}
	}
	if err := w.WaitDurable(ctx, 4); err != nil {
		t.Fatalf("wait for an index durable before the failure: %v", err)
	}
	mustEntries(t, w, 1, 11) // reads still work
	if d := w.DurableIndex(); d != 5 {
		t.Fatalf("durable index moved to %d after the failure", d)
	}
	if err := w.Close(); !errors.Is(err, ErrFailed) {
		t.Fatalf("close: %v", err)
	}
	fs.Crash()
	fs.Restart()
	w, rec := mustOpen(t, fs, opts)
	defer w.Close()
	if rec.Verdict == Truncated || rec.IndexLast < 5 {
		t.Fatalf("recovery %+v", rec)
	}
	mustEntries(t, w, 1, 6)
}

// After an EIO the page cache may still show bytes that never reached the disk, and a
// new fdatasync would not write them (Linux marked them clean). A process that restarts
// without a machine crash reads them back; Open rewrites the last batch before it
// fdatasyncs, so what that Open reports durable survives a later crash.
func TestRestartAfterEIOWithoutCrash(t *testing.T) {
	for seed := range uint64(60) {
		fs := vfs.NewMemFS(vfs.MemConfig{Seed: seed})
		opts := manual(smallOptions())
		w, _ := mustOpen(t, fs, opts)
		mustAppend(t, w, entries(1, 4, 1))
		w.flushOnce()
		mustAppend(t, w, entries(5, 4, 1))
		if err := fs.FailSync(activeSegmentPath(w)); err != nil {
			t.Fatal(err)
		}
		w.flushOnce()
		if !w.Failed() || w.DurableIndex() != 4 {
			t.Fatalf("seed %d: failed %v durable %d", seed, w.Failed(), w.DurableIndex())
		}
		_ = w.Close()
		w, rec := mustOpen(t, fs, opts) // same machine, no crash: the page cache survives
		if rec.IndexLast != 8 || w.DurableIndex() != 8 {
			t.Fatalf("seed %d: reopen without crash %+v", seed, rec)
		}
		_ = w.Close()
		fs.Crash()
		fs.Restart()
		w, rec = mustOpen(t, fs, opts)
		if rec.Verdict == Truncated || rec.IndexLast < 8 {
			t.Fatalf("seed %d: after the crash %+v: lost what the second open reported durable", seed, rec)
		}
		_ = w.Close()
	}
}

// Random fdatasync failures under concurrent appenders: once failed, the durable index
// never moves; after a crash, every acknowledged entry is there.
func TestRandomSyncFailures(t *testing.T) {
	for seed := range uint64(12) {
		fs := vfs.NewMemFS(vfs.MemConfig{Seed: seed, SyncFailRate: 0.02})
		opts := smallOptions()
		w, _, err := Open(fs, testDir, opts)
		if err != nil {
			continue // the failure hit Open itself
		}
		acked := runAppenders(t, w, 4, 50)
		d := w.DurableIndex()
		if w.Failed() {
			mustAppendFails(t, w)
			if w.DurableIndex() != d {
				t.Fatalf("seed %d: durable index moved after failure", seed)
			}
		}
		_ = w.Close()
		fs.Crash()
		fs.Restart()
		clean := vfs.NewMemFS(vfs.MemConfig{Seed: seed}) // recover without random failures
		copyDisk(t, fs, clean)
		checkAcked(t, clean, opts, acked, fmt.Sprintf("seed %d", seed))
	}
}

func mustAppendFails(t *testing.T, w *WAL) {
	t.Helper()
	if err := w.Append(entries(w.LastIndex()+1, 1, 1)); !errors.Is(err, ErrFailed) {
		t.Fatalf("append on a failed WAL: %v", err)
	}
}

// runAppenders runs n goroutines, each appending count entries (index assigned under a
// shared lock, as a server loop would) and waiting for durability. It returns the
// entries whose WaitDurable returned nil: the acknowledged ones.
func runAppenders(t *testing.T, w *WAL, n, count int) map[uint64]Entry {
	t.Helper()
	var mu sync.Mutex
	acked := map[uint64]Entry{}
	var wg sync.WaitGroup
	ctx := testCtx(t)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range count {
				mu.Lock()
				e := Entry{Index: w.LastIndex() + 1, Term: 1, Data: payload(0, 1, g*100000+i, 30+i%50)}
				err := w.Append([]Entry{e})
				mu.Unlock()
				if err != nil {
					t.Logf("append %d: %v", e.Index, err)
					return
				}
				if err := w.WaitDurable(ctx, e.Index); err != nil {
					if errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("wait for %d: %v (lost wakeup?)", e.Index, err)
					}
					t.Logf("wait %d: %v", e.Index, err)
					return
				}
				mu.Lock()
				acked[e.Index] = e
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return acked
}

func checkAcked(t *testing.T, fs vfs.FS, opts Options, acked map[uint64]Entry, where string) {
	t.Helper()
	w, rec := mustOpen(t, fs, opts)
	defer w.Close()
	if rec.Verdict == Truncated {
		t.Fatalf("%s: %+v", where, rec)
	}
	for i, e := range acked {
		if i > rec.IndexLast {
			t.Fatalf("%s: acknowledged entry %d lost (recovered to %d)", where, i, rec.IndexLast)
		}
		got := mustEntries(t, w, i, i+1)[0]
		if string(got.Data) != string(e.Data) {
			t.Fatalf("%s: acknowledged entry %d changed", where, i)
		}
	}
}

// Disk full when a segment is created: the WAL fails with ENOSPC, loudly, and reports
// nothing beyond what reached the full segment.
func TestDiskFull(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	opts := manual(smallOptions())
	w, _ := mustOpen(t, fs, opts)
	fs.SetCapacity(3 * 4096) // hard state (8 KiB) and one segment
	for i := uint64(1); i <= 40 && !w.Failed(); i++ {
		mustAppend(t, w, entries(i, 1, 1))
		w.flushOnce()
	}
	if !errors.Is(w.Err(), syscall.ENOSPC) || !errors.Is(w.Err(), ErrFailed) {
		t.Fatalf("err %v, want ErrFailed wrapping ENOSPC", w.Err())
	}
	d := w.DurableIndex()
	_ = w.Close()
	fs.SetCapacity(0)
	w, rec := mustOpen(t, fs, opts)
	defer w.Close()
	if rec.IndexLast < d || rec.Verdict == Truncated {
		t.Fatalf("recovery %+v below durable %d", rec, d)
	}
}

// A failed write (not a sync) also fails the WAL.
func TestWriteError(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, fs, manual(smallOptions()))
	defer w.Close()
	if err := fs.FailWrite(activeSegmentPath(w), syscall.EIO); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, entries(1, 2, 1))
	w.flushOnce()
	if !errors.Is(w.Err(), syscall.EIO) || w.DurableIndex() != 0 {
		t.Fatalf("err %v durable %d", w.Err(), w.DurableIndex())
	}
}

// A failed fdatasync of the hard state fails the WAL; the last durable hard state stays.
func TestHardStateSyncFailure(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, fs, manual(smallOptions()))
	defer w.Close()
	if err := w.SetHardState(HardState{Term: 1, Vote: 2}); err != nil {
		t.Fatal(err)
	}
	if err := fs.FailSync(segPath(hardStateName)); err != nil {
		t.Fatal(err)
	}
	if err := w.SetHardState(HardState{Term: 2}); !errors.Is(err, ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("set hard state: %v", err)
	}
	if hs := w.HardState(); hs != (HardState{Term: 1, Vote: 2}) {
		t.Fatalf("hard state %+v after a failed write", hs)
	}
	if !w.Failed() {
		t.Fatal("WAL not failed")
	}
}
