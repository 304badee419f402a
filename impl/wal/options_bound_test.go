package wal

import (
	"errors"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// EntryBytesMax may be as large as one record that fills an empty segment,
// not one byte more.
func TestEntryBytesMaxBound(t *testing.T) {
	o := smallOptions()
	largest := int(o.recordRoomMax() - recordHeaderBytes)
	o.EntryBytesMax = largest
	w, _, err := Open(vfs.NewMemFS(vfs.MemConfig{Seed: 1}), testDir, o)
	if err != nil {
		t.Fatalf("EntryBytesMax %d (a record filling an empty segment): %v", largest, err)
	}
	_ = w.Close()
	o.EntryBytesMax = largest + 1
	if _, _, err := Open(vfs.NewMemFS(vfs.MemConfig{Seed: 1}), testDir, o); !errors.Is(err, ErrInvalid) {
		t.Fatalf("EntryBytesMax %d: %v, want ErrInvalid", largest+1, err)
	}
}
