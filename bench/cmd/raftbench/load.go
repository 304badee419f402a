package main

import (
	"context"
	"slices"
	"sync"
	"time"
)

// op writes the k-th value of worker w; key is a buffer the worker owns.
type op func(ctx context.Context, w int, key []byte) error

// result is one measurement.
type result struct {
	writes, failed uint64
	elapsed        time.Duration
	lat            []time.Duration // sorted
	firstErr       error
}

func (r result) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.writes) / r.elapsed.Seconds()
}

func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))]
}

// drive runs clients workers, each writing one value after another to
// keys of its own (prefix-w-k), for warmup (not counted) and then for
// dur. A write counts when it is acknowledged inside the measured window;
// at its start and its end mark is called (the counters' snapshots).
func drive(ctx context.Context, clients int, prefix string, warmup, dur time.Duration, do op, mark func(end bool)) result {
	var wg sync.WaitGroup
	start := time.Now().Add(warmup)
	end := start.Add(dur)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	marked := make(chan struct{})
	go func() {
		defer close(marked)
		t := time.NewTimer(time.Until(start))
		defer t.Stop()
		select {
		case <-t.C:
			mark(false)
		case <-ctx.Done():
			return
		}
		<-ctx.Done()
		mark(true)
	}()
	defer func() { <-marked }()
	lats := make([][]time.Duration, clients)
	fails := make([]uint64, clients)
	errs := make([]error, clients)
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1024)
			key := make([]byte, 0, 64)
			for k := 0; ctx.Err() == nil; k++ {
				key = appendKey(key[:0], prefix, w, k)
				t0 := time.Now()
				err := do(ctx, w, key)
				t1 := time.Now()
				if t0.Before(start) || t1.After(end) {
					continue
				}
				if err != nil {
					if ctx.Err() == nil {
						fails[w]++
						if errs[w] == nil {
							errs[w] = err
						}
					}
					continue
				}
				lat = append(lat, t1.Sub(t0))
			}
			lats[w] = lat
		}()
	}
	wg.Wait()
	var r result
	r.elapsed = dur
	for w := range lats {
		r.lat = append(r.lat, lats[w]...)
		r.failed += fails[w]
		if r.firstErr == nil {
			r.firstErr = errs[w]
		}
	}
	r.writes = uint64(len(r.lat))
	slices.Sort(r.lat)
	return r
}

func appendKey(b []byte, prefix string, w, k int) []byte {
	b = append(b, prefix...)
	b = append(b, '-')
	b = appendUint(b, uint64(w))
	b = append(b, '-')
	return appendUint(b, uint64(k))
}

func appendUint(b []byte, v uint64) []byte {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, d[i:]...)
}
