package wal

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

const testDir = "/wal"

// logSink collects log lines so that tests can check what was said loudly.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *logSink) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// smallOptions are options for the in-memory disk: small segments and blocks so that a
// short workload rotates, recycles and tears across many blocks.
func smallOptions() Options {
	return Options{SegmentBytes: 4096, BlockBytes: 512, EntryBytesMax: 600, TailCacheBytes: 1024,
		SealDelay: -1, Logger: quietLogger()}
}

// manual makes o stepped, on a virtual clock of its own unless it has one.
func manual(o Options) Options {
	o.Stepped = true
	if o.Clock == nil {
		o.Clock = newFakeClock()
	}
	return o
}

// fakeClock is a virtual clock: it moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// flushOnce runs one group-commit cycle of a stepped WAL: it takes everything pending
// (skipping SyncDelay), writes, fdatasyncs and publishes. It reports whether there was
// work.
func (w *WAL) flushOnce() bool {
	w.mu.Lock()
	work := len(w.pending) > 0 && w.failErr == nil
	w.hurry = w.hurry || work
	w.mu.Unlock()
	if !work {
		return false
	}
	for {
		kind, _, _, err := w.runStep(driverStepped)
		if err != nil || kind == StepNone || kind == StepPublish {
			return true
		}
	}
}

// steps performs steps of a stepped WAL until none is due and returns their kinds.
func steps(t testing.TB, w *WAL) []StepKind {
	t.Helper()
	var kinds []StepKind
	for {
		k := w.NextStep()
		if k == StepNone {
			return kinds
		}
		if err := w.Step(); err != nil {
			t.Fatalf("step %s: %v", k, err)
		}
		kinds = append(kinds, k)
	}
}

func mustOpen(t testing.TB, fs vfs.FS, opts Options) (*WAL, *Recovery) {
	t.Helper()
	w, rec, err := Open(fs, testDir, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return w, rec
}

func payload(index, term uint64, version int, n int) []byte {
	head := fmt.Sprintf("i%d/t%d/v%d/", index, term, version)
	b := []byte(head)
	for len(b) < n {
		b = append(b, byte('a'+len(b)%26))
	}
	return b
}

func entries(first, n, term uint64) []Entry {
	out := make([]Entry, n)
	for i := range out {
		idx := first + uint64(i)
		out[i] = Entry{Index: idx, Term: term, Data: payload(idx, term, 0, 40)}
	}
	return out
}

func mustAppend(t testing.TB, w *WAL, ents []Entry) {
	t.Helper()
	if err := w.Append(ents); err != nil {
		t.Fatalf("append: %v", err)
	}
}

func mustEntries(t testing.TB, w *WAL, lo, hi uint64) []Entry {
	t.Helper()
	ents, err := w.Entries(lo, hi, 1<<40)
	if err != nil {
		t.Fatalf("entries [%d, %d): %v", lo, hi, err)
	}
	return ents
}

// layout recovers the disk image without opening a WAL and returns the accepted batches
// per segment name, and the segment names in log order.
func layout(t testing.TB, fs vfs.FS, opts Options) ([]string, map[string][]batchExtent) {
	t.Helper()
	w := &WAL{fs: fs, dir: testDir, opts: opts.withDefaults(), log: quietLogger()}
	disk, err := w.listDir()
	if err != nil {
		t.Fatal(err)
	}
	rl, err := w.recoverLog(disk)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	out := map[string][]batchExtent{}
	for _, s := range rl.scans {
		names = append(names, s.name)
		out[s.name] = s.res.batches
	}
	for _, d := range disk {
		_ = d.file.Close()
	}
	return names, out
}

func segPath(name string) string { return filepath.Join(testDir, name) }

// listFiles returns the WAL directory's file names with a prefix.
func listFiles(t testing.TB, fs vfs.FS, prefix string) []string {
	t.Helper()
	names, err := fs.List(testDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed*31+7)) }

// waitYield lets other goroutines run while a test polls a condition.
func waitYield() { runtime.Gosched() }
