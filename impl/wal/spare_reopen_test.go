package wal

import (
	"slices"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// A spare segment file left by an earlier life is offered again after Open
// and taken by the next rotation, instead of lying on disk unused while
// rotation makes another.
func TestSpareSurvivesReopen(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	opts := manual(smallOptions())
	w, _ := mustOpen(t, fs, opts)
	name := segmentFileName(prefixSpare, 99)
	if err := w.makeSpare(name); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, _ = mustOpen(t, fs, opts)
	defer w.Close()
	segs := len(listFiles(t, fs, prefixSegment))
	for i := uint64(1); i < 400 && len(listFiles(t, fs, prefixSegment)) == segs; i++ {
		mustAppend(t, w, entries(i, 1, 1))
		w.flushOnce()
	}
	if len(listFiles(t, fs, prefixSegment)) == segs {
		t.Fatal("the log never rotated")
	}
	if slices.Contains(listFiles(t, fs, prefixSpare), name) {
		t.Errorf("the spare %s of the earlier life is still unused after a rotation: files %v", name, listFiles(t, fs, ""))
	}
}
