package raft

import (
	"bytes"
	"runtime"
	"testing"
)

// cacheLog is a log whose cache holds about cacheMax bytes, filled by
// one-entry Readies of 100 bytes each, as a busy leader's is.
func cacheLog(tb testing.TB, cacheMax uint64, entries int) *raftLog {
	l := &raftLog{storage: NewMemoryStorage(), first: 1, cacheMax: cacheMax}
	for k := 0; k < entries; k++ {
		handOne(l)
	}
	return l
}

func handOne(l *raftLog) {
	l.append(Entry{Index: l.last + 1, Term: 1, Data: bytes.Repeat([]byte{byte(l.last)}, 100)})
	l.handOff()
}

// TestCacheHandOffAmortized: once the cache is full, a one-entry hand-off
// drops the oldest entry without copying the cache (it did: a copy of the
// whole cache, about a megabyte here, per Ready). The cache keeps the
// newest entries within its bound, in order.
func TestCacheHandOffAmortized(t *testing.T) {
	l := cacheLog(t, 1<<20, 30000)
	const runs = 5000
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for k := 0; k < runs; k++ {
		handOne(l)
	}
	runtime.ReadMemStats(&m1)
	// The cache's ~10,000 entries are ~400 KB of Entry; a hand-off's own
	// share (the entry's data, the Ready's slice, the cache's amortized
	// growth) is a few hundred bytes.
	if per := (m1.TotalAlloc - m0.TotalAlloc) / runs; per > 2048 {
		t.Fatalf("%d bytes allocated per one-entry hand-off with a full cache of %d entries (want the hand-off's own, not the cache's)", per, len(l.cache))
	}
	l = cacheLog(t, 1<<20, 30000)
	if l.cacheBytes > l.cacheMax {
		t.Fatalf("cache holds %d bytes over its bound %d", l.cacheBytes, l.cacheMax)
	}
	var sum uint64
	for _, e := range l.cache {
		sum += uint64(len(e.Data))
	}
	if sum != l.cacheBytes || l.cacheBytes+100 <= l.cacheMax {
		t.Fatalf("cache holds %d bytes, counted %d, bound %d: the newest entries within the bound", sum, l.cacheBytes, l.cacheMax)
	}
	cf := l.cacheFrom()
	for k, e := range l.cache {
		if e.Index != cf+uint64(k) || !bytes.Equal(e.Data, bytes.Repeat([]byte{byte(e.Index - 1)}, 100)) {
			t.Fatalf("cache[%d] is entry %d with the wrong data; want entry %d", k, e.Index, cf+uint64(k))
		}
	}
	got, err := l.entries(cf, l.last+1, 1<<30)
	if err != nil || len(got) != len(l.cache) || got[0].Index != cf {
		t.Fatalf("entries from the cache: %d entries from %v, err %v", len(got), got[0].Index, err)
	}
}

// BenchmarkCacheHandOff is a busy leader's hand-off of one-entry Readies
// with its cache full (CacheBytesMax's default, 100-byte entries).
func BenchmarkCacheHandOff(b *testing.B) {
	l := cacheLog(b, 4<<20, 50000)
	b.ReportAllocs()
	for b.Loop() {
		handOne(l)
	}
}

// TestEntriesFromMemory: entries from the cache and unstable come in one
// allocation and keep limitBytes' rule (at least one entry, then within
// the bound).
func TestEntriesFromMemory(t *testing.T) {
	l := cacheLog(t, 1<<20, 1000)
	for k := 0; k < 10; k++ {
		l.append(Entry{Index: l.last + 1, Term: 1, Data: bytes.Repeat([]byte{1}, 100)})
	}
	cf := l.cacheFrom()
	for _, c := range []struct {
		lo, hi, bytesMax uint64
		want             int
	}{
		{cf, l.last + 1, 1 << 30, int(l.last + 1 - cf)},
		{l.last - 20, l.last + 1, 1 << 30, 21}, // across cache and unstable
		{l.last - 20, l.last + 1, 250, 2},
		{l.last - 20, l.last + 1, 1, 1},
		{l.last - 5, l.last + 1, 1 << 30, 6}, // unstable only
		{cf, cf + 1, 0, 1},
	} {
		got, err := l.entries(c.lo, c.hi, c.bytesMax)
		if err != nil || len(got) != c.want {
			t.Fatalf("entries(%d, %d, %d): %d entries, err %v; want %d", c.lo, c.hi, c.bytesMax, len(got), err, c.want)
		}
		for k, e := range got {
			if e.Index != c.lo+uint64(k) {
				t.Fatalf("entries(%d, %d, %d)[%d] is entry %d", c.lo, c.hi, c.bytesMax, k, e.Index)
			}
		}
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = l.entries(l.last-40, l.last+1, 1<<30) }); a != 1 && !raceEnabled {
		t.Fatalf("entries from memory: %v allocations, want 1", a)
	}
}

// BenchmarkEntriesFromMemory is a leader's read of a 64-entry batch for an
// AppendEntries (cache and unstable).
func BenchmarkEntriesFromMemory(b *testing.B) {
	l := cacheLog(b, 4<<20, 50000)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = l.entries(l.last-63, l.last+1, 1<<30)
	}
}

// TestCacheCompact: compaction drops the cached entries it covers, so that
// the cache still holds cacheFrom..handed, its byte count is its entries'
// data, and later hand-offs keep it within its bound.
func TestCacheCompact(t *testing.T) {
	l := cacheLog(t, 1000, 20) // entries 11..20 cached, 100 bytes each
	l.compact(15)
	check := func(when string, from uint64) {
		t.Helper()
		var sum uint64
		for _, e := range l.cache {
			sum += uint64(len(e.Data))
		}
		first := uint64(0)
		if len(l.cache) > 0 {
			first = l.cache[0].Index
		}
		if cf := l.cacheFrom(); cf != from || first != from || sum != l.cacheBytes || sum > l.cacheMax {
			t.Fatalf("%s: cache of %d entries from %d (cacheFrom %d), %d bytes, counted %d, bound %d; want from %d",
				when, len(l.cache), first, cf, sum, l.cacheBytes, l.cacheMax, from)
		}
	}
	check("after compact(15)", 16)
	for k := 0; k < 8; k++ {
		handOne(l)
	}
	check("after 8 more hand-offs", 19)
}

// TestEntriesEmptyRange: an empty range [lo, hi) is no entries and no
// error wherever it lies, below the compaction point included (it asks
// for nothing that was compacted).
func TestEntriesEmptyRange(t *testing.T) {
	l := cacheLog(t, 1<<20, 10)
	l.first = 5 // as after a compaction to 4: entries below 5 are gone
	for _, r := range [][2]uint64{{3, 3}, {4, 2}, {5, 5}, {8, 8}, {11, 11}, {9, 7}} {
		got, err := l.entries(r[0], r[1], 1<<20)
		if err != nil || len(got) != 0 {
			t.Errorf("entries(%d, %d) = %d entries, %v; want none, nil", r[0], r[1], len(got), err)
		}
	}
	if _, err := l.entries(3, 6, 1<<20); err != ErrCompacted {
		t.Fatalf("entries(3, 6) below the compaction point: %v, want ErrCompacted", err)
	}
}

// TestTermBelowTheCompactionPoint: after a compaction the log knows the
// terms of the base and what follows, nothing below the base, however the
// runs of terms lie.
func TestTermBelowTheCompactionPoint(t *testing.T) {
	l := &raftLog{storage: NewMemoryStorage(), first: 1, cacheMax: 1 << 20}
	for i, term := range []uint64{1, 1, 2, 2, 3, 3, 3} {
		l.append(Entry{Index: uint64(i + 1), Term: term})
	}
	l.handOff()
	l.durable, l.committed, l.applied = 7, 7, 7
	l.compact(4)
	for _, c := range []struct {
		index, term uint64
		ok          bool
	}{{0, 0, true}, {1, 0, false}, {2, 0, false}, {3, 0, false}, {4, 2, true}, {5, 3, true}, {7, 3, true}, {8, 0, false}} {
		if term, ok := l.term(c.index); term != c.term || ok != c.ok {
			t.Errorf("term(%d) after compacting through 4 = %d, %v; want %d, %v", c.index, term, ok, c.term, c.ok)
		}
	}
}
