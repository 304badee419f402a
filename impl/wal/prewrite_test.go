package wal

import (
	"errors"
	"testing"
)

// writeBatch verifies every record in memory before it goes to disk: a record
// that decodes (its checksum verifies) but does not continue the chain, as a
// flip in memory before it was framed would leave it, fails the WAL with
// ErrCorrupt and is never written or reported durable.
func TestPrewriteVerificationRefusesBrokenChain(t *testing.T) {
	for name, breakRec := range map[string]func(prev uint32, e Entry) []byte{
		"chain": func(prev uint32, e Entry) []byte {
			b, _ := encodeRecord(nil, prev^1, e.Index, e.Term, e.Data)
			return b
		},
		"index": func(prev uint32, e Entry) []byte {
			b, _ := encodeRecord(nil, prev, e.Index+1, e.Term, e.Data)
			return b
		},
		"term": func(prev uint32, e Entry) []byte { b, _ := encodeRecord(nil, prev, e.Index, 1, e.Data); return b },
		"length": func(prev uint32, e Entry) []byte {
			b, _ := encodeRecord(nil, prev, e.Index, e.Term, e.Data)
			return append(b, 0)
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, w := openManual(t)
			mustAppend(t, w, entries(1, 2, 2))
			w.flushOnce()
			prev, err := w.Checksum(2)
			if err != nil {
				t.Fatal(err)
			}
			e := entries(3, 1, 2)[0]
			mustAppend(t, w, []Entry{e})
			w.mu.Lock()
			op := &w.pending[len(w.pending)-1]
			op.recs[len(op.recs)-1] = breakRec(prev, e)
			w.mu.Unlock()
			for i := 0; i < 10 && !w.Failed(); i++ {
				if err := w.Step(); err != nil && !errors.Is(err, ErrFailed) {
					t.Fatalf("step: %v", err)
				}
			}
			if !w.Failed() || !errors.Is(w.Err(), ErrCorrupt) {
				t.Fatalf("after a broken record in memory: failed %v, err %v; want failed with ErrCorrupt", w.Failed(), w.Err())
			}
			if d := w.DurableIndex(); d != 2 {
				t.Fatalf("durable index %d, want 2", d)
			}
		})
	}
}
