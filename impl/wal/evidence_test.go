package wal

import (
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// The evidence behind a break (a later batch header of the segment's generation) is
// looked for twice, the region read again in between, so that a flip on a read of that
// header cannot hide it: damage followed by evidence is TRUNCATED (durable data lost),
// never a torn tail cut as if it had not been acknowledged.
func TestEvidenceSurvivesTransientReadFlip(t *testing.T) {
	opts := manual(smallOptions())
	fs, last, bs := twentyEntries(t, opts)
	seg := segPath(last)
	// Durable damage in the last segment's second-to-last batch; its last batch's header
	// is the only evidence, and the first read of it (the segment's load) sees it
	// flipped. (Two flipped reads hide it: the scan reads it twice, no more.)
	if err := fs.FlipBit(seg, bs[len(bs)-2].liveEnd-1, 0); err != nil {
		t.Fatal(err)
	}
	if err := fs.FlipBitOnRead(seg, bs[len(bs)-1].offset+4, 0, 1); err != nil {
		t.Fatal(err)
	}
	w, rec := mustOpen(t, fs, opts)
	defer w.Close()
	if rec.Verdict != Truncated {
		t.Fatalf("verdict %s (%+v), want TRUNCATED; events %v", rec.Verdict, rec, fs.Events())
	}
}

// twentyEntries writes 20 entries into a fresh MemFS (seed 1) and closes the
// WAL, twice: the layout of one disk names the last segment and its batches
// (at least two), and the other disk, untouched by that reading, is returned
// with them for the evidence tests to damage.
func twentyEntries(t *testing.T, opts Options) (*vfs.MemFS, string, []batchExtent) {
	t.Helper()
	build := func() *vfs.MemFS {
		fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
		w, _ := mustOpen(t, fs, opts)
		fill(t, w, 20)
		_ = w.Close()
		return fs
	}
	names, lay := layout(t, build(), opts)
	last := names[len(names)-1]
	bs := lay[last]
	if len(bs) < 2 {
		t.Fatalf("set-up: %d batches in %s", len(bs), last)
	}
	return build(), last, bs
}
