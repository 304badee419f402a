package wal

import (
	"context"
	"fmt"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

func TestSmoke(t *testing.T) {
	fs := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	w, rec, err := Open(fs, "/w", Options{SegmentBytes: 8192, BlockBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rec)
	for i := uint64(1); i <= 100; i++ {
		if err := w.Append([]Entry{{Index: i, Term: 1, Data: []byte(fmt.Sprint("entry ", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WaitDurable(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
	ents, err := w.Entries(1, 101, 1<<20)
	if err != nil || len(ents) != 100 {
		t.Fatal(err, len(ents))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, rec, err = Open(fs, "/w", Options{SegmentBytes: 8192, BlockBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rec)
	ents, err = w.Entries(1, 101, 1<<20)
	if err != nil || len(ents) != 100 || string(ents[99].Data) != "entry 100" {
		t.Fatal(err, len(ents))
	}
	t.Log(w.Stats())
	w.Close()
}
