package wal

import "testing"

// A break inside durable data of the last segment, with a valid batch of the
// segment's generation behind it, is TRUNCATED, and Recovery says where that
// evidence lies: EvidenceOffset is the evidence batch's offset in
// StopSegment (-1 only when there is none).
func TestEvidenceOffsetReported(t *testing.T) {
	opts := manual(smallOptions())
	fs, last, bs := twentyEntries(t, opts)
	if err := fs.FlipBit(segPath(last), bs[len(bs)-2].liveEnd-1, 0); err != nil {
		t.Fatal(err)
	}
	w, rec := mustOpen(t, fs, opts)
	defer w.Close()
	if rec.Verdict != Truncated || rec.StopSegment != last {
		t.Fatalf("verdict %s in %s (%s), want TRUNCATED in %s", rec.Verdict, rec.StopSegment, rec.Reason, last)
	}
	if want := bs[len(bs)-1].offset; rec.EvidenceOffset != want {
		t.Fatalf("evidence offset %d, want %d (the last batch, behind the break at %d)", rec.EvidenceOffset, want, rec.StopOffset)
	}
}
