package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
	"github.com/durableraft/durableraft/viz"
)

// Every real-process run with traces on (scenario.traces) writes one
// trace per node and boot (raftd --trace DIR); after the run the files
// are merged so that every receive follows its send (viz's merge, as
// raftspec check-trace DIR does) and the merged run is checked against
// the spec.

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

// checkMerged checks a merged run against the spec.
func checkMerged(merged []byte) (int, error) {
	return spec.CheckTraceEvents(trace.NewReader(bytes.NewReader(merged), trace.ReadOptions{}))
}

// hardStateFields are the post-state fields a crash inside the runtime's
// hard-state hold can leave behind the spec's atomic step (the holes
// issue, item 1: the spec does not model the persistence window).
var hardStateFields = map[string]bool{"currentTerm": true, "votedFor": true, "learnedCommit": true, "truncatedAtTerm": true}

// persistenceGap reports whether err is a Crash the spec rejects only on
// hard-state fields: the known gap, not a refinement failure.
func persistenceGap(err error) bool {
	var mm *spec.TraceMismatch
	if !errors.As(err, &mm) || mm.Event.Action != "Crash" || len(mm.Candidates) == 0 {
		return false
	}
	for _, diffs := range mm.Candidates {
		for _, d := range diffs {
			if !hardStateFields[d.Field] {
				return false
			}
		}
	}
	return true
}

// checkRunTraces merges and checks the run's traces; the merged run is
// kept in the run's directory when it is rejected. With kills in the
// schedule (crashes), a Crash rejected on hard-state fields only is the
// persistence-window gap: the run is checked up to it and says so.
func (r *run) checkRunTraces(dir string) {
	merged, files, err := mergeTraces(dir)
	if err != nil {
		r.t.Errorf("%s: merging the traces: %v", r.sc.name, err)
		return
	}
	n, err := checkMerged(merged)
	switch {
	case err == nil:
		r.t.Logf("%s: the merged trace of %d files is a run of the spec (%d events)", r.sc.name, files, n)
		if r.sc.mutate {
			r.checkMutated(merged)
		}
		return
	case r.sc.kills && persistenceGap(err):
		r.t.Logf("%s: the merged trace of %d files checked up to event %d, a crash inside a hard-state hold the spec cannot express (holes issue, item 1): %v",
			r.sc.name, files, n, err)
		return
	}
	keep := filepath.Join(r.out, "merged.ndjson")
	_ = os.WriteFile(keep, merged, 0o644)
	r.traceRejected = true
	r.t.Errorf("%s: the merged trace (%d files, kept in %s) is rejected by the spec: %v", r.sc.name, files, keep, err)
}

// checkMutated: the accepted run with one message's term changed is
// rejected at exactly that event.
func (r *run) checkMutated(merged []byte) {
	k, verdict, err := mutateAndCheck(merged)
	if err != nil {
		r.t.Errorf("%s: mutating the merged trace: %v", r.sc.name, err)
		return
	}
	var mm *spec.TraceMismatch
	if !errors.As(verdict, &mm) || mm.Seq != k {
		r.t.Errorf("%s: the merged trace with event %d's message term changed: %v, want a rejection at event %d", r.sc.name, k, verdict, k)
		return
	}
	r.t.Logf("%s: with event %d's message term changed the spec rejects the run at that event: %s", r.sc.name, k, mm.Reason)
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
