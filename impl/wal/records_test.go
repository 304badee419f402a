package wal

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

func TestRecordEncodeDecode(t *testing.T) {
	e := Entry{Index: 7, Term: 3, Data: []byte("payload")}
	r, sum := EncodeRecord(0x1234, e)
	got, gotSum, prev, err := r.Decode(100)
	if err != nil || got.Index != 7 || got.Term != 3 || !bytes.Equal(got.Data, e.Data) || gotSum != sum || prev != 0x1234 {
		t.Fatalf("decode: %+v %08x %08x %v", got, gotSum, prev, err)
	}
	if &got.Data[0] != &r[recordHeaderBytes] {
		t.Fatal("Data does not alias the record")
	}
	flipped := append(Record(nil), r...)
	flipped[recordHeaderBytes+2] ^= 1
	for name, tc := range map[string]struct {
		r   Record
		max int
	}{
		"flipped":          {flipped, 100},
		"trailing byte":    {append(append(Record(nil), r...), 0), 100},
		"short":            {r[:len(r)-1], 100},
		"header only":      {r[:recordHeaderBytes-1], 100},
		"too large":        {r, len(e.Data) - 1},
		"index zero":       {mustEncode(0, Entry{Index: 0, Term: 1}), 100},
		"term zero":        {mustEncode(0, Entry{Index: 1, Term: 0}), 100},
		"reserved bytes":   {withByte(r, 30, 1), 100},
		"reserved byte 29": {withByte(r, 29, 1), 100},
		"reserved byte 31": {withByte(r, 31, 1), 100},
		"kind":             {withByte(r, 28, recordKindEntry+1), 100},
	} {
		if _, _, _, err := tc.r.Decode(tc.max); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func mustEncode(prev uint32, e Entry) Record {
	r, _ := EncodeRecord(prev, e)
	return r
}

// withByte returns a copy of r with byte i set to v and the checksum recomputed, so
// that only the field check can refuse it.
func withByte(r Record, i int, v byte) Record {
	c := append(Record(nil), r...)
	c[i] = v
	le.PutUint32(c[0:], checksum(c[4:]))
	return c
}

// Verified shipping: the bytes of an entry's record in the leader's WAL are the bytes
// on the wire and on the follower's disk, checksum and chain included, whether the
// leader serves them from its tail cache or its segments, durable or not.
func TestShippingByteForByte(t *testing.T) {
	leaderFS := vfs.NewMemFS(vfs.MemConfig{Seed: 1})
	opts := manual(smallOptions())
	leader, _ := mustOpen(t, leaderFS, opts)
	defer leader.Close()
	followerFS := vfs.NewMemFS(vfs.MemConfig{Seed: 2})
	follower, _ := mustOpen(t, followerFS, opts)
	fill(t, leader, 30) // rotates: some records only on disk (the tail cache is 1 KiB)
	mustAppend(t, leader, entries(31, 3, 2))
	// Shipped in pieces, before the last ones are durable on the leader.
	var shipped []Record
	for lo := uint64(1); lo <= leader.LastIndex(); {
		recs, err := leader.Records(lo, leader.LastIndex()+1, 700)
		if err != nil {
			t.Fatal(err)
		}
		if err := follower.AppendRecords(recs); err != nil {
			t.Fatalf("append records from %d: %v", lo, err)
		}
		shipped = append(shipped, recs...)
		lo += uint64(len(recs))
	}
	if leader.DurableIndex() != 30 {
		t.Fatalf("leader durable %d: the last records were meant to ship undurable", leader.DurableIndex())
	}
	for _, w := range []*WAL{leader, follower} {
		if err := w.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint64(0); i <= 33; i++ {
		a, _ := leader.Checksum(i)
		b, _ := follower.Checksum(i)
		if a != b {
			t.Fatalf("chain value at %d: leader %08x follower %08x", i, a, b)
		}
	}
	_ = follower.Close()
	follower, rec := mustOpen(t, followerFS, opts) // from the follower's disk now
	defer follower.Close()
	if rec.Verdict != Clean || rec.IndexLast != 33 {
		t.Fatalf("follower recovery %+v", rec)
	}
	onDisk := 0
	follower.mu.Lock()
	metas := append([]entryMeta(nil), follower.metas...)
	follower.mu.Unlock()
	for i, m := range metas {
		img, err := followerFS.ReadFile(segPath(m.seg.name))
		if err != nil {
			t.Fatal(err)
		}
		if got := img[m.offset : m.offset+int64(m.size)]; !bytes.Equal(got, shipped[i]) {
			t.Fatalf("record %d on the follower's disk differs from the leader's", i+1)
		}
		onDisk++
	}
	got, err := follower.Records(1, 34, 1<<20)
	if err != nil || len(got) != 33 {
		t.Fatalf("follower records: %d, %v", len(got), err)
	}
	for i := range got {
		if !bytes.Equal(got[i], shipped[i]) {
			t.Fatalf("record %d read back from the follower differs", i+1)
		}
	}
	if onDisk != 33 {
		t.Fatalf("%d records checked on disk", onDisk)
	}
}

// A record handed out stays as it was, whatever the WAL does afterwards at its index.
func TestRecordsImmutable(t *testing.T) {
	fs, w := openManual(t)
	mustAppend(t, w, entries(1, 4, 1))
	recs, err := w.Records(1, 5, 1<<20) // from the tail cache: not yet on disk
	if err != nil {
		t.Fatal(err)
	}
	saved := make([]Record, len(recs))
	for i, r := range recs {
		saved[i] = append(Record(nil), r...)
	}
	if err := w.TruncateSuffix(2); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, entries(2, 3, 2))
	w.flushOnce()
	for w.LastIndex() < 40 { // evicts the cache, rotates
		mustAppend(t, w, entries(w.LastIndex()+1, 4, 2))
		w.flushOnce()
	}
	if len(listFiles(t, fs, prefixSegment)) < 2 {
		t.Fatal("no rotation")
	}
	for i := range recs {
		if !bytes.Equal(recs[i], saved[i]) || cap(recs[i]) != len(recs[i]) {
			t.Fatalf("record %d changed after it was handed out", i+1)
		}
	}
}

func TestAppendRecordsRejects(t *testing.T) {
	_, w := openManual(t)
	mustAppend(t, w, entries(1, 3, 2))
	w.flushOnce()
	tipSum, _ := w.Checksum(3)
	r4, s4 := EncodeRecord(tipSum, Entry{Index: 4, Term: 2, Data: []byte("four")})
	r5, _ := EncodeRecord(s4, Entry{Index: 5, Term: 3, Data: []byte("five")})
	flipped := append(Record(nil), r4...)
	flipped[33] ^= 0x10
	for name, tc := range map[string]struct {
		recs []Record
		want []error
		says string // the error names the damage, not a symptom of it
	}{
		"bad bytes":            {[]Record{flipped}, []error{ErrCorrupt}, "checksum"},
		"trailing bytes":       {[]Record{append(append(Record(nil), r4...), 9)}, []error{ErrCorrupt}, "followed by 1 more"},
		"second bad":           {[]Record{r4, r5[:len(r5)-1]}, []error{ErrCorrupt}, "overruns"},
		"first does not chain": {[]Record{mustEncode(tipSum+1, Entry{Index: 4, Term: 2})}, []error{ErrChain}, ""},
		"next does not chain":  {[]Record{r4, mustEncode(tipSum, Entry{Index: 5, Term: 2})}, []error{ErrChain}, ""},
		"index gap":            {[]Record{mustEncode(tipSum, Entry{Index: 5, Term: 2})}, []error{ErrChain, ErrNonContiguous}, ""},
		"index repeated":       {[]Record{mustEncode(tipSum, Entry{Index: 3, Term: 2})}, []error{ErrChain, ErrNonContiguous}, ""},
		"term back":            {[]Record{mustEncode(tipSum, Entry{Index: 4, Term: 1})}, []error{ErrChain, ErrInvalid}, ""},
		"too large":            {[]Record{mustEncode(tipSum, Entry{Index: 4, Term: 2, Data: make([]byte, 601)})}, []error{ErrInvalid}, ""},
	} {
		err := w.AppendRecords(tc.recs)
		for _, want := range tc.want {
			if !errors.Is(err, want) {
				t.Errorf("%s: %v, want %v", name, err, want)
			}
		}
		if err != nil && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an error that says %q", name, err, tc.says)
		}
		if w.LastIndex() != 3 || w.NextStep() != StepNone {
			t.Fatalf("%s: a refused append changed the log: last %d, next step %s", name, w.LastIndex(), w.NextStep())
		}
	}
	if err := w.AppendRecords([]Record{r4, r5}); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := mustEntries(t, w, 4, 6); string(got[0].Data) != "four" || got[1].Term != 3 {
		t.Fatalf("entries %+v", got)
	}
}

func TestChecksum(t *testing.T) {
	_, w := openManual(t)
	if sum, err := w.Checksum(0); err != nil || sum != chainSeed(0, 0) {
		t.Fatalf("checksum of the empty log: %08x %v", sum, err)
	}
	fill(t, w, 40)
	if _, err := w.Checksum(41); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("beyond last: %v", err)
	}
	recs, _ := w.Records(10, 11, 0)
	_, sum10, _, _ := recs[0].Decode(600)
	if got, err := w.Checksum(10); err != nil || got != sum10 {
		t.Fatalf("checksum of 10: %08x %v, record says %08x", got, err, sum10)
	}
	if err := w.CompactPrefix(30); err != nil {
		t.Fatal(err)
	}
	base := w.FirstIndex() - 1
	recs, _ = w.Records(base+1, base+2, 0)
	_, _, prev, _ := recs[0].Decode(600)
	if got, err := w.Checksum(base); err != nil || got != prev {
		t.Fatalf("checksum at the watermark %d: %08x %v, next record chains to %08x", base, got, err, prev)
	}
	if _, err := w.Checksum(base - 1); !errors.Is(err, ErrCompacted) {
		t.Fatalf("below the watermark: %v", err)
	}
}
