package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/durableraft/durableraft/conformance/sim"
	"github.com/durableraft/durableraft/impl/marks"
)

// result is one seed's outcome. A failing seed keeps its run, to write
// its files.
type result struct {
	seed      uint64
	nodes     int
	counts    sim.Counts
	ops       int
	violation string
	err       error
	s         *sim.Sim
	v         sim.Verdict
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	marks.Enable(true)
	marks.Reset()
	start := time.Now()
	results := runSeeds(c, stderr, start)
	var total sim.Counts
	ops, violations, seeds := 0, 0, 0
	var first *result
	for _, r := range results {
		if r.err != nil {
			return fmt.Errorf("seed %d: %w", r.seed, r.err)
		}
		seeds++
		ops += r.ops
		total.Add(r.counts)
		if r.violation != "" {
			violations++
			if first == nil {
				first = r
			}
		}
	}
	if c.seeds == 1 && (c.trace != "" || c.history != "") {
		if err := sim.WriteFiles(results[0].s, results[0].v, c.trace, c.history, ""); err != nil {
			return err
		}
	}
	for _, f := range total.Faults() {
		fmt.Fprintf(stdout, "fault %s %d\n", f.Kind, f.N)
	}
	for _, m := range marks.All() {
		fmt.Fprintf(stdout, "mark %s %d\n", m.Name(), m.Count())
	}
	if !c.quiet {
		fmt.Fprintf(stderr, "raftsim: %d seeds in %v\n", seeds, time.Since(start).Round(time.Millisecond))
	}
	summary := fmt.Sprintf("seeds=%d ops=%d faults=%d violations=%d", seeds, ops, total.FaultsTotal(), violations)
	if first == nil {
		fmt.Fprintln(stdout, summary+" result=ok")
		return nil
	}
	if err := reportFailure(c, first, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s result=violation seed=%d\n", summary, first.seed)
	return exitError(1)
}

// reportFailure writes the failing seed's trace, history and porcupine's
// visualization and says how to replay it.
func reportFailure(c *config, r *result, stdout io.Writer) error {
	base := filepath.Join(c.out, fmt.Sprintf("raftsim-seed-%d", r.seed))
	trace, history, html := base+".trace.ndjson", base+".history.ndjson", base+".html"
	if err := sim.WriteFiles(r.s, r.v, trace, history, html); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "violation seed=%d nodes=%d: %s\n", r.seed, r.nodes, oneLine(r.violation))
	fmt.Fprintf(stdout, "wrote %s %s %s\n", trace, history, html)
	replay := append([]string{"raftsim", fmt.Sprintf("-seed=%d", r.seed)}, c.replayArgs...)
	fmt.Fprintf(stdout, "replay: %s -trace=%s -history=%s\n", strings.Join(replay, " "), trace, history)
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// runSeeds runs the seeds on c.workers goroutines and returns the results
// in seed order: every seed, or (without -keep-going) every seed up to the
// smallest failing one: a worker takes no seed above a failing one, and the
// seeds below it all finish, so the answer does not depend on the workers.
func runSeeds(c *config, stderr io.Writer, start time.Time) []*result {
	var mu sync.Mutex
	next, end := c.seedStart, c.seedStart+c.seeds // [next, end)
	stop := uint64(math.MaxUint64)
	done := map[uint64]*result{}
	failing := 0
	lastProgress := start
	take := func() (uint64, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= end || next >= stop {
			return 0, false
		}
		next++
		return next - 1, true
	}
	var wg sync.WaitGroup
	for w := 0; w < c.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed, ok := take(); ok; seed, ok = take() {
				r := runOne(c, seed)
				mu.Lock()
				done[seed] = r
				if r.violation != "" {
					failing++
					if !c.keepGoing && seed < stop {
						stop = seed
					}
				}
				if !c.quiet && time.Since(lastProgress) >= 2*time.Second {
					lastProgress = time.Now()
					fmt.Fprintf(stderr, "raftsim: %d/%d seeds, %d failing, %v\n", len(done), c.seeds, failing, time.Since(start).Round(time.Second))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var out []*result
	for seed := c.seedStart; seed < end && seed <= stop; seed++ {
		if r, ok := done[seed]; ok {
			out = append(out, r)
		}
	}
	return out
}

// runOne runs one seed with every check.
func runOne(c *config, seed uint64) *result {
	o := c.options(seed)
	s, v, err := sim.Check(o)
	r := &result{seed: seed, nodes: o.N, err: err, violation: v.Violation, v: v}
	if s != nil {
		r.counts, r.ops = s.Counts, len(s.History())
	}
	if v.Violation != "" || c.seeds == 1 {
		r.s = s // kept to write its files
	}
	return r
}
