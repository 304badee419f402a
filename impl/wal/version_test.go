package wal

import (
	"errors"
	"slices"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// TestUnknownVersionRefused: a segment whose header verifies but names a
// format version this build does not read (another build wrote it) makes
// Open fail with ErrVersion, changing nothing on disk; a header damaged
// at rest is still recovery's (ErrCorrupt, a verdict), not a refusal.
func TestUnknownVersionRefused(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, fs, smallOptions())
	mustAppend(t, w, entries(1, 5, 1))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs := listFiles(t, fs, prefixSegment)
	if len(segs) == 0 {
		t.Fatal("no segment")
	}
	b, err := fs.ReadFile(segPath(segs[0]))
	if err != nil {
		t.Fatal(err)
	}
	le.PutUint16(b[8:], formatVersion+1)
	le.PutUint32(b[0:], checksum(b[4:segmentHeaderBytes]))
	if err := fs.WriteFile(segPath(segs[0]), b); err != nil {
		t.Fatal(err)
	}
	before, _ := fs.List(testDir)
	_, _, err = Open(fs, testDir, smallOptions())
	if !errors.Is(err, ErrVersion) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a version %d segment: %v, want ErrVersion", formatVersion+1, err)
	}
	if after, _ := fs.List(testDir); !slices.Equal(before, after) {
		t.Fatalf("the refused Open changed the directory: %v -> %v", before, after)
	}
	if _, err := decodeSegmentHeader(b); !errors.Is(err, ErrVersion) {
		t.Fatalf("decode: %v", err)
	}
	b[20] ^= 1 // damage: the checksum no longer verifies
	if _, err := decodeSegmentHeader(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a damaged header: %v, want ErrCorrupt", err)
	}
}
