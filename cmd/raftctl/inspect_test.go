package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// TestWALInspect: a clean log is reported CLEAN with every record
// verified; the same log with a flipped byte inside a record (behind a
// later batch) is reported TRUNCATED; the directory is never changed.
func TestWALInspect(t *testing.T) {
	dir := t.TempDir()
	walDir := filepath.Join(dir, "wal")
	w, _, err := wal.Open(vfs.OS{}, walDir, wal.Options{SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 20; i++ {
		data, _ := kv.Put([]byte("k"), bytes.Repeat([]byte{'v'}, 100)).Marshal()
		if err := w.Append([]wal.Entry{{Index: i, Term: 1, Data: data}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	if code := inspect(dir, &out, &errw); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out.String(), errw.String())
	}
	for _, want := range []string{"verdict      CLEAN", "20 records verified", "put=20", "hardstate"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Damage the first record's payload (a later batch vouches for it).
	seg := filepath.Join(walDir, "seg-0000000000000001.wal")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte("vvvv"))
	b[at] ^= 1
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	inspect(dir, &out, &errw)
	if !strings.Contains(out.String(), "TRUNCATED") {
		t.Fatalf("a damaged record not reported:\n%s", out.String())
	}
	after, _ := os.ReadFile(seg)
	if !bytes.Equal(after, b) {
		t.Fatal("inspect changed the segment")
	}
	names, _ := os.ReadDir(walDir)
	for _, n := range names {
		if strings.HasPrefix(n.Name(), "corrupt-") {
			t.Fatal("inspect quarantined a segment on disk")
		}
	}
}
