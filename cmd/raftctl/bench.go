package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/durableraft/durableraft/impl/client"
)

// bench drives writes of fixed-size values to distinct keys for a fixed
// time and reports writes/s and latency percentiles. A sanity check on
// one machine, not the benchmark of issue 17.
func (e *env) bench(args []string) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(e.err)
	clients := fs.Int("clients", 16, "concurrent writers")
	conns := fs.Int("conns", 1, "pipelined connections (clients are spread over them)")
	dur := fs.Duration("duration", 5*time.Second, "how long to write")
	size := fs.Int("value-bytes", 100, "value size")
	useHTTP := fs.Bool("http", false, "write over HTTP PUT instead of the pipelined protocol")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	value := []byte(strings.Repeat("v", *size))
	var cs []*client.Client
	for k := 0; k < *conns && !*useHTTP; k++ {
		c, err := e.client()
		if err != nil {
			return e.exit(err)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	hc := &http.Client{Transport: e.httpTransport(*clients), Timeout: e.timeout}
	ctx, cancel := context.WithTimeout(context.Background(), *dur)
	defer cancel()
	var ok, failed, unknown atomic.Uint64
	lat := make([][]time.Duration, *clients)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ctx.Err() == nil; k++ {
				key := fmt.Sprintf("bench-%d-%d", w, k)
				t0 := time.Now()
				var err error
				if *useHTTP {
					err = e.httpPut(ctx, hc, key, value)
				} else {
					_, err = cs[w%len(cs)].Put(ctx, []byte(key), value)
				}
				switch {
				case err == nil:
					ok.Add(1)
					lat[w] = append(lat[w], time.Since(t0))
				case ctx.Err() != nil:
				case errors.Is(err, client.ErrUnknown):
					unknown.Add(1)
				default:
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(p*float64(len(all))))]
	}
	mode := "pipelined"
	if *useHTTP {
		mode = "http"
	}
	fmt.Fprintf(e.out, "mode=%s clients=%d writes=%d writes_per_s=%.0f p50=%v p99=%v p999=%v failed=%d unknown=%d\n",
		mode, *clients, ok.Load(), float64(ok.Load())/elapsed.Seconds(), pct(0.50), pct(0.99), pct(0.999), failed.Load(), unknown.Load())
	return 0
}

// httpPut writes through the first endpoint that answers, following
// redirects to the leader.
func (e *env) httpPut(ctx context.Context, hc *http.Client, key string, value []byte) error {
	for _, ep := range e.endpoints {
		req, err := http.NewRequestWithContext(ctx, "PUT", e.scheme()+"://"+ep+"/v1/kv/"+key, strings.NewReader(string(value)))
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case 200:
			return nil
		case 504:
			return client.ErrUnknown
		}
	}
	return errors.New("no endpoint took the write")
}
