package wal

import (
	"slices"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// A first segment whose header fails verification (no base segment after it
// verifies either) ends the log before it: it and every later segment are
// quarantined, reported in Recovery.Quarantined and renamed to corrupt-*, and
// never read again as part of the log, also on the next open. (A damaged
// header after the first drops its predecessor too: nextDamaged.)
func TestDamagedSegmentHeaderIsQuarantined(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, _ := mustOpen(t, fs, smallOptions())
	for i := uint64(1); i < 400 && len(listFiles(t, fs, prefixSegment)) < 3; i++ {
		mustAppend(t, w, entries(i, 1, 1))
		if err := w.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs := listFiles(t, fs, prefixSegment)
	if len(segs) < 3 {
		t.Fatalf("segments %v, want 3", segs)
	}
	slices.Sort(segs)
	damaged := segs[0]
	img := readFile(t, fs, damaged)
	img[12] ^= 0xff // inside the segment header, under its checksum
	writeFile(t, fs, damaged, img)

	w, rec := mustOpen(t, fs, smallOptions())
	var want []string
	for _, s := range segs {
		want = append(want, prefixCorrupt+strings.TrimPrefix(s, prefixSegment))
	}
	got := slices.Sorted(slices.Values(rec.Quarantined))
	if !slices.Equal(got, want) {
		t.Errorf("quarantined %v, want %v (the first header is damaged); reason %s", got, want, rec.Reason)
	}
	if left := listFiles(t, fs, prefixSegment); slices.Contains(left, damaged) || slices.Contains(left, segs[1]) {
		t.Errorf("segment files %v after recovery quarantined %v", left, segs)
	}
	if corrupt := listFiles(t, fs, prefixCorrupt); !slices.Equal(slices.Sorted(slices.Values(corrupt)), want) {
		t.Errorf("corrupt files %v, want %v", corrupt, want)
	}
	last := w.LastIndex()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, rec = mustOpen(t, fs, smallOptions())
	defer w.Close()
	if len(rec.Quarantined) != 0 || w.LastIndex() != last {
		t.Errorf("second open: quarantined %v, last %d; want none, %d", rec.Quarantined, w.LastIndex(), last)
	}
}
