package wal

import (
	"errors"
	"testing"
)

// TestResetChain: a reset after a snapshot taken from another log links to that
// log's chain: the records the other log holds after the snapshot point are accepted
// byte for byte (AppendRecords), the chain value survives a reopen, and the durable
// index reaches the reset point only once the reset is on disk.
func TestResetChain(t *testing.T) {
	// The leader's log: 20 entries; the snapshot is at 12.
	lfs, leader := openManual(t)
	fill(t, leader, 20)
	sum12, err := leader.Checksum(12)
	if err != nil {
		t.Fatal(err)
	}
	term12, _ := leader.Term(12)
	recs, err := leader.Records(13, 21, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	_ = lfs

	fs, w := openManual(t)
	fill(t, w, 5)
	if err := w.ResetChain(12, term12, sum12); err != nil {
		t.Fatal(err)
	}
	if got := w.DurableIndex(); got >= 12 {
		t.Fatalf("durable %d before the reset is on disk", got)
	}
	if got, _ := w.Checksum(12); got != sum12 {
		t.Fatalf("chain at the reset point %08x, want %08x", got, sum12)
	}
	// A reset with chainSeed would refuse these records: they chain to the leader's.
	if err := w.AppendRecords(recs); err != nil {
		t.Fatalf("the leader's records after the snapshot: %v", err)
	}
	w.flushOnce()
	if got := w.DurableIndex(); got != 20 {
		t.Fatalf("durable %d, want 20", got)
	}
	_ = w.Close()
	w, rec := mustOpen(t, fs, manual(smallOptions()))
	defer w.Close()
	if rec.Verdict != Clean || rec.IndexFirst != 13 || rec.IndexLast != 20 {
		t.Fatalf("reopen: %+v", rec)
	}
	if got, _ := w.Checksum(12); got != sum12 {
		t.Fatalf("chain at the watermark after reopen %08x, want %08x", got, sum12)
	}
	for i := uint64(13); i <= 20; i++ {
		a, _ := w.Checksum(i)
		b, _ := leader.Checksum(i)
		if a != b {
			t.Fatalf("chain at %d: %08x, leader %08x", i, a, b)
		}
	}
}

// TestResetChainBelowWatermark: a recovery that must throw a compacted log away resets
// below the watermark, to an empty log at 0 included; Reset refuses that.
func TestResetChainBelowWatermark(t *testing.T) {
	fs, w := openManual(t)
	fill(t, w, 30)
	if err := w.CompactPrefix(20); err != nil {
		t.Fatal(err)
	}
	base := w.FirstIndex() - 1
	if base == 0 {
		t.Fatal("nothing compacted")
	}
	if err := w.Reset(base-1, 1); !errors.Is(err, ErrCompacted) {
		t.Fatalf("Reset below the watermark: %v", err)
	}
	if err := w.ResetChain(3, 0, 1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ResetChain at term 0: %v", err)
	}
	if err := w.ResetChain(0, 0, chainSeed(0, 0)); err != nil {
		t.Fatal(err)
	}
	if w.FirstIndex() != 1 || w.LastIndex() != 0 || w.DurableIndex() != 0 {
		t.Fatalf("after the reset to 0: first %d last %d durable %d", w.FirstIndex(), w.LastIndex(), w.DurableIndex())
	}
	mustAppend(t, w, entries(1, 4, 7))
	w.flushOnce()
	_ = w.Close()
	w, rec := mustOpen(t, fs, manual(smallOptions()))
	defer w.Close()
	if rec.Verdict != Clean || rec.IndexFirst != 1 || rec.IndexLast != 4 {
		t.Fatalf("reopen: %+v", rec)
	}
	if tm, _ := w.Term(1); tm != 7 {
		t.Fatalf("term at 1: %d", tm)
	}
}
