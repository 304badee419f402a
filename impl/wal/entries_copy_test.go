package wal

import (
	"bytes"
	"testing"
)

// Entries never hands out the tail cache: a caller that writes into the Data
// it got (from the cache or from disk) changes nothing the WAL serves next.
func TestEntriesDataIsACopy(t *testing.T) {
	_, w := openManual(t)
	want := entries(1, 3, 1)
	mustAppend(t, w, want)
	for _, flushed := range []bool{false, true} {
		if flushed {
			for w.flushOnce() {
			}
		}
		got := mustEntries(t, w, 1, 4)
		for i := range got {
			for k := range got[i].Data {
				got[i].Data[k] = 'X'
			}
		}
		again := mustEntries(t, w, 1, 4)
		for i := range again {
			if !bytes.Equal(again[i].Data, want[i].Data) {
				t.Fatalf("flushed %v: entry %d reads %q after the caller wrote into an earlier read, want %q", flushed, i+1, again[i].Data, want[i].Data)
			}
		}
	}
}
