package wal

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestRecordRing drives the ring and a plain slice with the same random
// operations (push, drop from the front, keep a prefix, reset) and
// compares them after each; the slots outside the ring's records are nil.
func TestRecordRing(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q recordRing
	var model [][]byte
	next := 0
	rec := func() []byte { next++; return []byte{byte(next), byte(next >> 8)} }
	for step := 0; step < 20000; step++ {
		switch op := rng.IntN(10); {
		case op < 5:
			recs := make([][]byte, rng.IntN(40))
			for k := range recs {
				recs[k] = rec()
			}
			q.push(recs)
			model = append(model, recs...)
		case op < 8:
			k := rng.IntN(len(model) + 1)
			want := 0
			for _, r := range model[:k] {
				want += len(r)
			}
			if got := q.dropFront(k); got != want {
				t.Fatalf("step %d: dropFront(%d) = %d bytes, want %d", step, k, got, want)
			}
			model = model[k:]
		case op < 10 && rng.IntN(20) > 0:
			k := rng.IntN(len(model) + 1)
			want := 0
			for _, r := range model[k:] {
				want += len(r)
			}
			if got := q.keep(k); got != want {
				t.Fatalf("step %d: keep(%d) = %d bytes, want %d", step, k, got, want)
			}
			model = model[:k]
		default:
			q.reset()
			model = nil
		}
		if q.len() != len(model) {
			t.Fatalf("step %d: %d records, want %d", step, q.len(), len(model))
		}
		for k := range model {
			if !bytes.Equal(q.at(k), model[k]) {
				t.Fatalf("step %d: record %d is %v, want %v", step, k, q.at(k), model[k])
			}
		}
		held := 0
		for _, r := range q.buf {
			if r != nil {
				held++
			}
		}
		if held != q.n || (len(q.buf)&(len(q.buf)-1)) != 0 {
			t.Fatalf("step %d: %d slots hold a record for %d records, capacity %d", step, held, q.n, len(q.buf))
		}
	}
}

// BenchmarkRecordRing is the tail cache at its bound: each push of a
// batch evicts as many records from the front.
func BenchmarkRecordRing(b *testing.B) {
	var q recordRing
	batch := make([][]byte, 64)
	for k := range batch {
		batch[k] = make([]byte, 128)
	}
	for range 32768 / 64 {
		q.push(batch)
	}
	b.ReportAllocs()
	for b.Loop() {
		q.push(batch)
		q.dropFront(len(batch))
	}
}
