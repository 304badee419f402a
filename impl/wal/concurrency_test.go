package wal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// Appenders, readers and a compactor at once, with the real flusher (run it with
// -race). Every acknowledged entry reads back before and after a reopen.
func TestConcurrentAppendReadCompact(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	opts := smallOptions()
	opts.SealDelay = 0 // default idle seals on
	w, _ := mustOpen(t, fs, opts)
	var stop atomic.Bool
	var bg sync.WaitGroup
	errc := make(chan error, 2)
	bg.Add(2)
	go func() { // reader: ranges of the durable log, straight from segments or the cache
		defer bg.Done()
		for !stop.Load() {
			d, first := w.DurableIndex(), w.FirstIndex()
			if d < first {
				continue
			}
			ents, err := w.Entries(first, d+1, 4096)
			if errors.Is(err, ErrCompacted) {
				continue // a compaction moved the watermark between the two calls
			}
			if err != nil {
				errc <- fmt.Errorf("entries [%d, %d]: %w", first, d, err)
				return
			}
			for i, e := range ents {
				if e.Index != first+uint64(i) {
					errc <- fmt.Errorf("entry %d at position %d from %d", e.Index, i, first)
					return
				}
			}
		}
	}()
	go func() { // compactor
		defer bg.Done()
		for !stop.Load() {
			if err := w.CompactPrefix(w.DurableIndex() / 2); err != nil {
				errc <- err
				return
			}
		}
	}()
	acked := runAppenders(t, w, 8, 150)
	stop.Store(true)
	bg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if len(acked) != 8*150 {
		t.Fatalf("%d of %d appends acknowledged", len(acked), 8*150)
	}
	first := w.FirstIndex()
	for i, e := range acked {
		if i >= first {
			if got := mustEntries(t, w, i, i+1)[0]; string(got.Data) != string(e.Data) {
				t.Fatalf("entry %d changed", i)
			}
		}
	}
	st := w.Stats()
	if st.RecordsSynced != 8*150 {
		t.Fatalf("stats %+v", st)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range acked {
		if i < first {
			delete(acked, i)
		}
	}
	checkAcked(t, fs, opts, acked, "reopen")
}

// A crash at a random operation while goroutines append and wait: every acknowledged
// entry survives. The flusher's batching makes each run different; the invariant does
// not depend on it.
func TestConcurrentCrash(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 8
	}
	for seed := range uint64(seeds) {
		fs := vfs.NewMemFS(vfs.MemConfig{Seed: seed})
		fs.CrashAtOp(10 + newRand(seed).Uint64N(60))
		opts := smallOptions()
		opts.SyncDelay = []time.Duration{0, 100 * time.Microsecond, time.Millisecond}[seed%3]
		w, _, err := Open(fs, testDir, opts)
		if err != nil {
			fs.Restart()
			continue
		}
		acked := runAppenders(t, w, 6, 40)
		_ = w.Close()
		fs.CrashAtOp(0)
		fs.Restart()
		checkAcked(t, fs, opts, acked, fmt.Sprintf("seed %d", seed))
	}
}

// Many rounds of append-then-wait through the real flusher: a lost wakeup would hang a
// waiter until the test context expires.
func TestNoLostWakeups(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, fs, smallOptions())
	defer w.Close()
	ctx := testCtx(t)
	for i := uint64(1); i <= 2000; i++ {
		mustAppend(t, w, []Entry{{Index: i, Term: 1, Data: []byte("x")}})
		if i%2 == 0 {
			if err := w.WaitDurable(ctx, i); err != nil {
				t.Fatalf("wait %d: %v", i, err)
			}
			continue
		}
		// The other way to wait: the channel taken before reading the index.
		for {
			ch := w.DurableNotify()
			if w.DurableIndex() >= i {
				break
			}
			select {
			case <-ch:
			case <-ctx.Done():
				t.Fatalf("notify for %d: %v", i, ctx.Err())
			}
		}
	}
}

// SyncDelay delays the fdatasync, never the durability rule: with an hour's delay
// nothing is durable until Sync hurries the flusher, and a crash before that loses
// only what was never reported durable.
func TestSyncDelay(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	opts := smallOptions()
	opts.SyncDelay = time.Hour
	w, _ := mustOpen(t, fs, opts)
	mustAppend(t, w, entries(1, 3, 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.WaitDurable(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with a cancelled context: %v", err)
	}
	if d := w.DurableIndex(); d != 0 {
		t.Fatalf("durable %d inside the sync delay", d)
	}
	if err := w.Sync(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if d := w.DurableIndex(); d != 3 {
		t.Fatalf("durable %d after Sync", d)
	}
	mustAppend(t, w, entries(4, 3, 1)) // gathered, not synced
	fs.Crash()
	_ = w.Close()
	fs.Restart()
	w, rec := mustOpen(t, fs, opts)
	defer w.Close()
	if rec.IndexLast < 3 || rec.Verdict == Truncated {
		t.Fatalf("recovery %+v", rec)
	}
}

// One flush makes every pending append durable with one batch and one fdatasync.
func TestGroupCommitOneSyncPerFlush(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, fs, manual(smallOptions()))
	defer w.Close()
	before := w.Stats()
	for i := uint64(1); i <= 6; i++ {
		mustAppend(t, w, entries(i, 1, 1))
	}
	if w.DurableIndex() != 0 {
		t.Fatal("durable before any flush")
	}
	w.flushOnce()
	after := w.Stats()
	if after.Syncs-before.Syncs != 1 || after.Batches-before.Batches != 1 || after.RecordsSynced-before.RecordsSynced != 6 {
		t.Fatalf("stats before %+v after %+v", before, after)
	}
	if w.DurableIndex() != 6 {
		t.Fatalf("durable %d", w.DurableIndex())
	}
}
