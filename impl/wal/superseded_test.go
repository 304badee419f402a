package wal

import (
	"slices"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// readFile returns a file's bytes on fs.
func readFile(t *testing.T, fs vfs.FS, name string) []byte {
	t.Helper()
	f, err := fs.Open(segPath(name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// writeFile creates name on fs with b, durably.
func writeFile(t *testing.T, fs vfs.FS, name string, b []byte) {
	t.Helper()
	f, err := fs.Create(segPath(name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(testDir); err != nil {
		t.Fatal(err)
	}
}

// A truncation to a segment's first index replaces all of it: startSegment
// drops every segment starting after the new tip, the one starting at the
// new segment's first index included. A crash after the new segment is
// durable and before the old one's release leaves both on disk, starting at
// the same index. Recovery must treat the old one as runtime did:
// superseded (cases.go's R3, "a later segment starts at or below this one's
// first index"), its file released, not kept in the log as a segment with
// no records. Found by mutation testing (recovery.go's
// d.hdr.indexFirst-1 > limit, which took only a later segment starting
// below this one as superseding it).
func TestTruncationToSegmentStartSupersedesIt(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, fs, smallOptions())
	var first uint64 // the tail segment's first index, once it is past 1
	for i := uint64(1); first <= 1 && i < 400; i++ {
		mustAppend(t, w, entries(i, 1, 1))
		if err := w.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		first = w.segs[len(w.segs)-1].hdr.indexFirst
		w.mu.Unlock()
	}
	if first <= 1 {
		t.Fatal("the log never rotated")
	}
	w.mu.Lock()
	old := w.segs[len(w.segs)-1].name
	w.mu.Unlock()
	mustAppend(t, w, entries(first+1, 2, 1)) // the old segment holds first..first+2
	if err := w.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	image := readFile(t, fs, old)

	if err := w.TruncateSuffix(first); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, entries(first, 1, 2))
	if err := w.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(listFiles(t, fs, ""), old) {
		t.Fatalf("%s is still on disk after the truncation released it", old)
	}
	// The crash between the new segment and the old one's release.
	writeFile(t, fs, old, image)

	w, rec := mustOpen(t, fs, smallOptions())
	defer w.Close()
	if rec.Verdict != Clean || rec.IndexLast != first {
		t.Fatalf("recovery: %s (%s) through %d, want CLEAN through %d: %s", rec.Verdict, rec.Case, rec.IndexLast, first, rec.Reason)
	}
	if want := []string{"R2", "R3", "R5"}; !slices.Equal(rec.Path, want) {
		t.Errorf("path %v, want %v: the old segment superseded (R3)", rec.Path, want)
	}
	w.mu.Lock()
	for _, s := range w.segs {
		if s.name == old {
			t.Errorf("%s (first index %d) is in the log after recovery; a later segment starts at the same index", old, first)
		}
	}
	w.mu.Unlock()
	if slices.Contains(listFiles(t, fs, ""), old) {
		t.Errorf("%s is still on disk after recovery superseded it: %v", old, listFiles(t, fs, ""))
	}
	got := mustEntries(t, w, first, first+1)
	if len(got) != 1 || got[0].Term != 2 {
		t.Fatalf("entry %d after recovery: %+v, want the truncation's term-2 entry", first, got)
	}
}
