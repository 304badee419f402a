package wal

import (
	"path/filepath"
	"strings"
	"testing"
)

// The segment a first Open creates is fresh and made while the WAL opens, when
// there is time: it is zero-filled over its whole length and fdatasync'd, not
// only fallocated (createSegment; docs/wal.md, "Zero fill"), so that the first
// fdatasyncs of the log do not also commit extent conversions.
func TestOpenZeroFillsItsFreshSegment(t *testing.T) {
	fs := newWriteCountFS()
	opts := manual(smallOptions())
	w, _ := mustOpen(t, fs, opts)
	defer w.Close()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	found := false
	for name, n := range fs.written {
		if !strings.HasPrefix(filepath.Base(name), prefixTmp) {
			continue
		}
		found = true
		if n < int64(opts.SegmentBytes) {
			t.Errorf("%s: %d bytes written at Open, want the whole segment (%d)", name, n, opts.SegmentBytes)
		}
		if fs.synced[name] != n {
			t.Errorf("%s: %d bytes written, %d of them fdatasync'd", name, n, fs.synced[name])
		}
	}
	if !found {
		t.Fatalf("Open created no segment: %v", fs.written)
	}
}
