package wal

import (
	"context"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// BenchmarkDurableAppend measures what an acknowledged write costs on the real disk
// (a temporary directory): each of n appenders appends one 128-byte record, then waits
// until it is durable. Beside it, in the same run, a raw loop writes the same number of
// records, coalesced into buffers of the batch size the WAL achieved (records per
// fdatasync, padded to whole 4 KiB blocks), to a file prepared like a WAL segment
// (preallocated and zero-filled), one fdatasync per buffer: the ceiling for that batch
// size. The two alternate in 16 rounds
// so that both see the same disk weather. Metrics: appends/s, records/fsync,
// raw-appends/s (totals over the run) and ratio (the median over rounds of WAL over
// raw throughput).
//
//	go test -run '^$' -bench DurableAppend -benchtime 5s -count 3 ./impl/wal
func BenchmarkDurableAppend(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("appenders=%d", n), func(b *testing.B) { benchDurableAppend(b, n) })
	}
}

// benchRatios logs every round's ratio: go test -bench DurableAppend -args -benchratios
var benchRatios = flag.Bool("benchratios", false, "log the per-round ratios of BenchmarkDurableAppend")

const (
	benchPayloadBytes = 128
	benchRounds       = 16
	benchSegmentBytes = 64 << 20
)

func benchDurableAppend(b *testing.B, appenders int) {
	dir := b.TempDir()
	// Idle seals off: between rounds the WAL idles while the raw loop runs, and a seal
	// written then would be charged to the raw loop. Under steady load there are none.
	w, _, err := Open(vfs.OS{}, filepath.Join(dir, "wal"), Options{Logger: quietLogger(), SealDelay: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	raw := newRawLog(b, dir)
	defer raw.close()
	var walTime, rawTime time.Duration
	var ratios []float64
	var next uint64
	before := w.Stats()
	b.ResetTimer()
	for r := range benchRounds {
		target := uint64(b.N) * uint64(r+1) / benchRounds
		if target == next {
			continue
		}
		from, st0 := next, w.Stats()
		start := time.Now()
		next = appendDurably(b, w, appenders, next, target)
		walRound := time.Since(start)
		st := w.Stats()
		perSync := float64(st.RecordsSynced-st0.RecordsSynced) / float64(max(st.Syncs-st0.Syncs, 1))
		rawRound := raw.write(b, perSync, int(target-from))
		walTime += walRound
		rawTime += rawRound
		ratios = append(ratios, rawRound.Seconds()/walRound.Seconds())
	}
	b.StopTimer()
	after := w.Stats()
	perSync := float64(after.RecordsSynced-before.RecordsSynced) / float64(max(after.Syncs-before.Syncs, 1))
	b.ReportMetric(float64(b.N)/walTime.Seconds(), "appends/s")
	b.ReportMetric(perSync, "records/fsync")
	b.ReportMetric(float64(b.N)/rawTime.Seconds(), "raw-appends/s")
	// The median of the per-round ratios: the disk's speed drifts by tens of percent
	// from one second to the next, and each round compares neighbours in time.
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
	if *benchRatios {
		b.Logf("per-round ratios %.2f", ratios)
	}
}

// appendDurably runs appenders until index target is appended and acknowledged, each
// appending one record (indexes assigned in order, as a server loop would) and waiting
// for it to be durable. It returns the last index.
func appendDurably(b *testing.B, w *WAL, appenders int, next, target uint64) uint64 {
	data := make([]byte, benchPayloadBytes)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= target {
					mu.Unlock()
					return
				}
				next++
				index := next
				err := w.Append([]Entry{{Index: index, Term: 1, Data: data}})
				mu.Unlock()
				if err != nil {
					b.Error(err)
					return
				}
				if err := w.WaitDurable(context.Background(), index); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return next
}

// rawLog is the raw ceiling: coalesced buffers, one fdatasync each, into files
// prepared like WAL segments.
type rawLog struct {
	dir   string
	f     vfs.File
	off   int64
	files int
}

func newRawLog(b *testing.B, dir string) *rawLog {
	r := &rawLog{dir: dir}
	r.rotate(b)
	return r
}

func (r *rawLog) rotate(b *testing.B) {
	if r.f != nil {
		_ = r.f.Close()
	}
	r.files++
	f, err := (vfs.OS{}).Create(filepath.Join(r.dir, fmt.Sprintf("raw-%d", r.files)))
	if err == nil {
		err = f.Preallocate(benchSegmentBytes)
	}
	if err == nil {
		err = zeroFill(f, 0, benchSegmentBytes)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		b.Fatal(err)
	}
	r.f, r.off = f, 0
}

// write writes records in buffers of perSync records and returns the time spent
// writing and syncing (file preparation excluded, as for the WAL's spares).
func (r *rawLog) write(b *testing.B, perSync float64, records int) time.Duration {
	batch := max(1, int(math.Round(perSync)))
	// Padded to whole 4 KiB blocks, the shape of a WAL batch: on the disk we measured,
	// fdatasync after a partial-page write was slower than after a whole-page one, and a
	// ceiling should have the better shape.
	// The records' bytes are non-zero and the padding zero, as in a WAL batch.
	recordsBytes := batch * (recordHeaderBytes + benchPayloadBytes)
	buf := make([]byte, alignUp(int64(recordsBytes), 4096))
	for i := range recordsBytes {
		buf[i] = byte(i) | 1
	}
	var spent time.Duration
	for done := 0; done < records; done += batch {
		if r.off+int64(len(buf)) > benchSegmentBytes {
			r.rotate(b)
		}
		start := time.Now()
		if _, err := r.f.WriteAt(buf, r.off); err != nil {
			b.Fatal(err)
		}
		if err := r.f.Sync(); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(start)
		r.off += int64(len(buf))
	}
	return spent
}

func (r *rawLog) close() { _ = r.f.Close() }

// BenchmarkFollowerRound measures, side by side on the real disk, what a follower's
// replication round costs when the commit index it learns is persisted as hard state
// (impl/raft persists HardState.LearnedCommit before the acknowledgment leaves) against
// the round without it: append one 128-byte entry and wait until it is durable, then,
// in the second kind of round, also SetHardState with the commit index advanced. The
// metric hs-round/log-round is the latency ratio of the two, interleaved in one run.
func BenchmarkFollowerRound(b *testing.B) {
	w, _, err := Open(vfs.OS{}, filepath.Join(b.TempDir(), "wal"), Options{Logger: quietLogger(), SealDelay: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	data := make([]byte, benchPayloadBytes)
	var index uint64
	round := func(withHardState bool) time.Duration {
		start := time.Now()
		index++
		if err := w.Append([]Entry{{Index: index, Term: 1, Data: data}}); err != nil {
			b.Fatal(err)
		}
		if err := w.WaitDurable(ctx, index); err != nil {
			b.Fatal(err)
		}
		if withHardState {
			if err := w.SetHardState(HardState{Term: 1, Vote: 1, Commit: index}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var logTime, hsTime time.Duration
	b.ResetTimer()
	for range b.N {
		logTime += round(false)
		hsTime += round(true)
	}
	b.StopTimer()
	b.ReportMetric(float64(logTime.Nanoseconds())/float64(b.N), "ns/log-round")
	b.ReportMetric(float64(hsTime.Nanoseconds())/float64(b.N), "ns/hs-round")
	b.ReportMetric(hsTime.Seconds()/logTime.Seconds(), "hs-round/log-round")
}

// BenchmarkLeaderBatch measures the CPU and allocations of the leader's WAL work per
// batch of 64 100-byte entries, without waiting on the disk in the loop (the flusher
// writes in the background; a WaitDurable every 16 batches bounds the backlog):
// "append" is Append of the batch, "ship" is Append then Records of the batch (what
// the leader reads back to send it, from the tail cache). Metrics per record. The
// flusher's writes and fdatasyncs run on the same cores, so ns/op follows the disk and
// the machine's load; the allocation counts are the stable figure (CPU of the read
// alone: BenchmarkRecordsCached).
//
//	go test -run '^$' -bench LeaderBatch -benchmem ./impl/wal
func BenchmarkLeaderBatch(b *testing.B) {
	for _, ship := range []bool{false, true} {
		name := "append"
		if ship {
			name = "ship"
		}
		b.Run(name, func(b *testing.B) { benchLeaderBatch(b, ship) })
	}
}

func benchLeaderBatch(b *testing.B, ship bool) {
	const batch = 64
	w, _, err := Open(vfs.OS{}, filepath.Join(b.TempDir(), "wal"), Options{Logger: quietLogger(), SealDelay: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	data := make([]byte, 100)
	entries := make([]Entry, batch)
	var index uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		lo := index + 1
		for k := range entries {
			index++
			entries[k] = Entry{Index: index, Term: 1, Data: data}
		}
		if err := w.Append(entries); err != nil {
			b.Fatal(err)
		}
		if ship {
			recs, err := w.Records(lo, index+1, math.MaxUint64)
			if err != nil || len(recs) != batch {
				b.Fatalf("records [%d, %d): %d, %v", lo, index+1, len(recs), err)
			}
		}
		if i%16 == 15 {
			if err := w.WaitDurable(ctx, index); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/record")
}

// BenchmarkRecordsCached measures Records of 64 durable 100-byte records still in the
// tail cache (the leader's read of what it ships), with no disk work in the loop.
func BenchmarkRecordsCached(b *testing.B) {
	const batch = 64
	w, _, err := Open(vfs.OS{}, filepath.Join(b.TempDir(), "wal"), Options{Logger: quietLogger(), SealDelay: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	const first = 1 << 20 // indexes of a log that has run a while (not small integers)
	if err := w.Reset(first-1, 1); err != nil {
		b.Fatal(err)
	}
	entries := make([]Entry, batch)
	for k := range entries {
		entries[k] = Entry{Index: first + uint64(k), Term: 1, Data: make([]byte, 100)}
	}
	if err := w.Append(entries); err != nil {
		b.Fatal(err)
	}
	if err := w.WaitDurable(context.Background(), first+batch-1); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if recs, err := w.Records(first, first+batch, math.MaxUint64); err != nil || len(recs) != batch {
			b.Fatalf("records: %d, %v", len(recs), err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/record")
}
