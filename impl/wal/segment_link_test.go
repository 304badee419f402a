package wal

import (
	"slices"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// Each segment's header must continue the log where the segment before it
// ends: its previous term and its chain checksum (its first index too, which
// the segment before is scanned up to). A header that verifies but breaks the
// chain or the term (a bug that wrote it, or a file from another log) ends the
// log at the link, TRUNCATED, with the link as the reason; nothing behind it
// is served.
func TestSegmentHeaderMustLink(t *testing.T) {
	for name, breakIt := range map[string]func(h *segmentHeader){
		"term":     func(h *segmentHeader) { h.termPrev++ },
		"checksum": func(h *segmentHeader) { h.checksumPrev ^= 1 },
	} {
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
			w, _ := mustOpen(t, fs, smallOptions())
			for i := uint64(1); i < 400 && len(listFiles(t, fs, prefixSegment)) < 3; i++ {
				mustAppend(t, w, entries(i, 1, 1+i/8))
				if err := w.Sync(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			last := w.LastIndex()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			segs := slices.Sorted(slices.Values(listFiles(t, fs, prefixSegment)))
			if len(segs) < 3 {
				t.Fatalf("segments %v, want 3", segs)
			}
			img := readFile(t, fs, segs[1])
			h, err := decodeSegmentHeader(img)
			if err != nil {
				t.Fatal(err)
			}
			breakIt(&h)
			h.encode(img)
			writeFile(t, fs, segs[1], img)

			w, rec := mustOpen(t, fs, smallOptions())
			defer w.Close()
			if rec.Verdict != Truncated || !strings.Contains(rec.Reason, "segment starts at") || rec.IndexLast >= h.indexFirst || w.LastIndex() >= last {
				t.Fatalf("recovery: %s (%s) through %d: %s; want TRUNCATED at the link, before %d", rec.Verdict, rec.Case, rec.IndexLast, rec.Reason, h.indexFirst)
			}
		})
	}
}
