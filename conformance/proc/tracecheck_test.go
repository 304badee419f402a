package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
	"github.com/durableraft/durableraft/viz"
)

// Every real-process run with traces on (scenario.traces) writes one
// trace per node and boot (raftd --trace DIR), every line stamped with the
// node's Lamport clock; after the run the files are merged by clock (viz's
// merge, as raftspec check-trace DIR does: every receive follows its send)
// and the merged run is checked against the spec.

// mergeTraces merges the per-node traces in dir.
func mergeTraces(dir string) ([]byte, int, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	if err != nil || len(paths) == 0 {
		return nil, 0, fmt.Errorf("no traces in %s (%v)", dir, err)
	}
	slices.Sort(paths)
	var sources []viz.Source
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, 0, err
		}
		defer f.Close()
		sources = append(sources, viz.Source{Name: p, R: f})
	}
	var merged bytes.Buffer
	// A kill -9 may tear a node's last line; the events before it stand.
	if _, err := viz.Build(sources, viz.Options{TornTail: true, Merged: &merged}); err != nil {
		return nil, 0, err
	}
	return merged.Bytes(), len(paths), nil
}

// checkBudget bounds one merged run's check: a checker whose frontier
// (the spec states the trace so far can be in) blows up fails the run by
// name, with the merged trace kept, instead of running into go test's
// timeout.
const checkBudget = 3 * time.Minute

// checkStats is what a check saw: the largest frontier.
type checkStats struct{ frontierMax int }

// checkMerged checks a merged run against the spec, within checkBudget.
func checkMerged(merged []byte) (int, error) {
	n, _, err := checkMergedStats(merged)
	return n, err
}

func checkMergedStats(merged []byte) (int, checkStats, error) {
	var st checkStats
	rd := trace.NewReader(bytes.NewReader(merged), trace.ReadOptions{})
	init, err := rd.Next()
	if err != nil {
		return 0, st, err
	}
	c, err := spec.NewTraceChecker(&init)
	if err != nil {
		return 1, st, err
	}
	deadline := time.Now().Add(checkBudget)
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return c.Events(), st, nil
		}
		if err != nil {
			return c.Events(), st, err
		}
		if err := c.Step(&e); err != nil {
			return c.Events(), st, err
		}
		st.frontierMax = max(st.frontierMax, c.Frontier())
		if c.Events()%1024 == 0 && time.Now().After(deadline) {
			return c.Events(), st, fmt.Errorf("the check ran over its budget of %v at event %d (frontier %d, largest %d): the checker's search blew up",
				checkBudget, c.Events(), c.Frontier(), st.frontierMax)
		}
	}
}

// checkRunTraces merges and checks the run's traces (checkTraces).
func (r *run) checkRunTraces(dir string) {
	checkTraces(r.t, r.sc.name, dir, r.out, r.sc.mutate)
}

// checkTraces merges the per-node traces in dir by their logical clocks,
// requires each node's clocks to grow across its restarts (clockReport),
// and checks the merged run against the spec: the whole run, kills and
// restarts included (the spec's persistence window makes a crash inside a
// hard-state hold a step of the spec). A rejected merge is kept in out.
// With mutate, the accepted run with one message's term changed must be
// rejected at that event. It reports whether the run was accepted.
func checkTraces(t *testing.T, name, dir, out string, mutate bool) bool {
	t.Helper()
	merged, files, err := mergeTraces(dir)
	if err != nil {
		t.Errorf("%s: merging the traces: %v", name, err)
		return false
	}
	rep, err := clockReport(merged)
	if err != nil {
		t.Errorf("%s: the merged trace's clocks: %v", name, err)
		return false
	}
	n, st, err := checkMergedStats(merged)
	if err != nil {
		keep := filepath.Join(out, "merged.ndjson")
		_ = os.WriteFile(keep, merged, 0o644)
		t.Errorf("%s: the merged trace (%d files, kept in %s) is rejected by the spec: %v", name, files, keep, err)
		return false
	}
	t.Logf("%s: the merged trace of %d files is a run of the spec (%d events, frontier at most %d); %s", name, files, n, st.frontierMax, rep)
	if mutate {
		checkMutated(t, name, merged)
	}
	return true
}

// clockReport checks the merged run's logical clocks: on every line, never
// decreasing along the merge (it is by clock), strictly growing at each
// node across its restarts (a boot's Crash, Corrupt or FromSnapshot event
// above the node's last clock before it), and it says how many restarts
// the clocks crossed.
func clockReport(merged []byte) (string, error) {
	evs, err := trace.Decode(bytes.NewReader(merged))
	if err != nil {
		return "", err
	}
	last := map[string]uint64{}
	restarts := 0
	var prev uint64
	for k, e := range evs[1:] {
		switch {
		case e.Clock == 0:
			return "", fmt.Errorf("event %d (%s at %s) has no clock", k+1, e.Action, e.Node)
		case e.Clock < prev:
			return "", fmt.Errorf("event %d (%s at %s): clock %d after %d: not merged by clock", k+1, e.Action, e.Node, e.Clock, prev)
		case e.Clock <= last[e.Node]:
			return "", fmt.Errorf("event %d (%s at %s): the node's clock %d after its %d", k+1, e.Action, e.Node, e.Clock, last[e.Node])
		}
		if strings.HasPrefix(e.Action, "Crash") || strings.HasPrefix(e.Action, "Corrupt") {
			if last[e.Node] > 0 {
				restarts++
			}
		}
		prev, last[e.Node] = e.Clock, e.Clock
	}
	return fmt.Sprintf("merged by Lamport clock, each node's clock growing across %d restarts (last clocks %v)", restarts, last), nil
}

// checkMutated: the accepted run with one message's term changed is
// rejected at exactly that event.
func checkMutated(t *testing.T, name string, merged []byte) {
	t.Helper()
	k, verdict, err := mutateAndCheck(merged)
	if err != nil {
		t.Errorf("%s: mutating the merged trace: %v", name, err)
		return
	}
	var mm *spec.TraceMismatch
	if !errors.As(verdict, &mm) || mm.Seq != k {
		t.Errorf("%s: the merged trace with event %d's message term changed: %v, want a rejection at event %d", name, k, verdict, k)
		return
	}
	t.Logf("%s: with event %d's message term changed the spec rejects the run at that event: %s", name, k, mm.Reason)
}

// mutateAndCheck changes one protocol field of one event of an accepted
// merged run (a message's term, in the middle of the run; still valid
// JSON) and returns the checker's verdict and the event changed.
func mutateAndCheck(merged []byte) (int, error, error) {
	evs, err := trace.Decode(bytes.NewReader(merged))
	if err != nil {
		return 0, nil, err
	}
	k := len(evs) / 2
	for ; k < len(evs) && (evs[k].Msg == nil || evs[k].Action == "DropMessage"); k++ {
	}
	if k == len(evs) {
		return 0, nil, errors.New("no message event to mutate")
	}
	evs[k].Msg.Mterm++
	var buf bytes.Buffer
	w := trace.NewWriterVersion(&buf, evs[0].V)
	for _, e := range evs {
		w.Write(e)
	}
	if err := w.Flush(); err != nil {
		return 0, nil, err
	}
	_, verdict := checkMerged(buf.Bytes())
	return k, verdict, nil
}
