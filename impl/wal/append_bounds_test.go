package wal

import (
	"errors"
	"testing"
)

// The edges of Append's validation that TestAppendValidation's log of
// term-2 entries cannot show: term 0 on an empty log (where "term regress"
// cannot catch it, the log's term being 0 too), and an entry of exactly
// EntryBytesMax bytes, which is allowed.
func TestAppendValidationEdges(t *testing.T) {
	_, w := openManual(t)
	if err := w.Append([]Entry{{Index: 1, Term: 0}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("term 0 as the first entry: %v, want ErrInvalid", err)
	}
	if w.LastIndex() != 0 {
		t.Fatalf("the rejected append changed the log: last %d", w.LastIndex())
	}
	max := w.opts.EntryBytesMax
	if err := w.Append([]Entry{{Index: 1, Term: 1, Data: make([]byte, max)}}); err != nil {
		t.Fatalf("an entry of EntryBytesMax (%d) bytes: %v", max, err)
	}
	if err := w.Append([]Entry{{Index: 2, Term: 1, Data: make([]byte, max+1)}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an entry of EntryBytesMax+1 bytes: %v, want ErrInvalid", err)
	}
	w.flushOnce()
	if got := mustEntries(t, w, 1, 2); len(got) != 1 || len(got[0].Data) != max {
		t.Fatalf("entry 1: %d entries, want one of %d bytes", len(got), max)
	}
}
