package conformance

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/durableraft/durableraft/conformance/sim"
)

// TestRapidCluster is the state-machine property: rapid generates the
// cluster (3 to 5 nodes, clients, keys), the rates of the per-message and
// per-sync faults, and a sequence of steps — client operations (get, put,
// delete, CAS on value and on revision, from clients that retry under
// their sessions), crashes now or at an I/O point, partitions and heals,
// bit flips at rest, fdatasync EIO, a full disk, and advances of virtual
// time. After every step no invariant may be broken; at the end the
// cluster heals and every check runs (liveness, the KV checks, porcupine,
// the spec's trace checker). A failing case is shrunk by rapid, and its
// seed, schedule, trace, history and porcupine's visualization are written
// to RAPID_SIM_DIR (default: a directory under the system's temporary
// directory), named in the failure. make test runs rapid's default 100
// checks (-rapid.checks=N for more).
func TestRapidCluster(t *testing.T) {
	last, checks := rapidProperty(t, nil)
	t.Cleanup(func() {
		if t.Failed() && *last != nil {
			dir, err := (*last).write(os.Getenv("RAPID_SIM_DIR"))
			if err != nil {
				t.Logf("writing the failing case: %v", err)
				return
			}
			t.Logf("the shrunk failing case (seed %d, %d nodes) is in %s", (*last).opts.Seed, (*last).opts.N, dir)
		}
	})
	t.Logf("%d rapid checks", *checks)
}

// TestRapidClusterShrinks: with a bug on (a put acknowledged before it
// commits), the same property fails, rapid shrinks the case, and the case
// is written out: its options and schedule, trace, history and porcupine's
// visualization.
func TestRapidClusterShrinks(t *testing.T) {
	// No fail file in testdata/ for an expected failure, and a shorter
	// shrink than rapid's default 30 s (make test's budget).
	for name, value := range map[string]string{"rapid.nofailfile": "true", "rapid.shrinktime": "4s"} {
		old := flag.Lookup(name).Value.String()
		if err := flag.Set(name, value); err != nil {
			t.Fatal(err)
		}
		defer flag.Set(name, old)
	}
	tb := &recordingTB{name: t.Name()}
	last, checks := rapidProperty(tb, func(o *sim.Options) { o.ServerBugs = sim.BugAckBeforeCommit })
	if !tb.failed || *last == nil {
		t.Fatalf("the property passed %d checks with ack-before-commit on", *checks)
	}
	dir, err := (*last).write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"case.txt", "trace.ndjson", "history.ndjson", "history.html"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Fatalf("%s not written: %v", name, err)
		}
	}
	t.Logf("%d cases run (the search and the shrinking); shrunk to %d steps: %s\n  %s", *checks, len((*last).schedule), (*last).v.Violation,
		strings.Join((*last).schedule, "\n  "))
}

// rapidProperty runs the property on tb; tweak (nil: none) changes the
// options of every case (a bug switch). It returns the last failing case
// and the number of cases run.
func rapidProperty(tb rapid.TB, tweak func(*sim.Options)) (**rapidFailure, *int) {
	var last *rapidFailure
	checks := 0
	rapid.Check(tb, func(rt *rapid.T) {
		checks++
		o := rapidOptions(rt)
		if tweak != nil {
			tweak(&o)
		}
		s, err := sim.NewDriven(o)
		if err != nil {
			rt.Fatal(err)
		}
		var schedule []string
		fail := func(v sim.Verdict) {
			last = &rapidFailure{opts: o, s: s, v: v, schedule: schedule}
			rt.Fatalf("seed %d, %d nodes, after %d steps: %s", o.Seed, o.N, len(schedule), v.Violation)
		}
		rt.Repeat(rapidSteps(s, &schedule, func() {
			if len(s.Violations) > 0 {
				fail(sim.Verdict{Violation: s.Violations[0]})
			}
		}))
		v, err := s.Finish()
		if err != nil {
			rt.Fatal(err)
		}
		if v.Violation != "" {
			fail(v)
		}
	})
	return &last, &checks
}

// recordingTB is a rapid.TB for a property expected to fail: it records
// the failure instead of failing the test.
type recordingTB struct {
	name   string
	failed bool
	logs   []string
}

func (r *recordingTB) Helper()      {}
func (r *recordingTB) Name() string { return r.name }
func (r *recordingTB) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Log(args ...any)                   { r.logs = append(r.logs, fmt.Sprint(args...)) }
func (r *recordingTB) Skipf(format string, args ...any)  {}
func (r *recordingTB) Skip(args ...any)                  {}
func (r *recordingTB) SkipNow()                          {}
func (r *recordingTB) Errorf(format string, args ...any) { r.failed = true; r.Logf(format, args...) }
func (r *recordingTB) Error(args ...any)                 { r.failed = true; r.Log(args...) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.Errorf(format, args...) }
func (r *recordingTB) Fatal(args ...any)                 { r.Error(args...) }
func (r *recordingTB) FailNow()                          { r.failed = true }
func (r *recordingTB) Fail()                             { r.failed = true }
func (r *recordingTB) Failed() bool                      { return r.failed }

// rapidOptions draws the cluster and the fault rates.
func rapidOptions(rt *rapid.T) sim.Options {
	o := sim.Default(rapid.Uint64Range(1, 1<<32).Draw(rt, "seed"))
	o.N = rapid.IntRange(3, 5).Draw(rt, "nodes")
	o.Clients = rapid.IntRange(1, 5).Draw(rt, "clients")
	o.SessionlessClients = rapid.IntRange(0, 1).Draw(rt, "sessionless")
	o.Pipeline = rapid.IntRange(1, 3).Draw(rt, "pipeline")
	o.Keys = rapid.IntRange(1, 4).Draw(rt, "keys")
	o.PreVote, o.CheckQuorum = rapid.Bool().Draw(rt, "prevote"), rapid.Bool().Draw(rt, "checkquorum")
	o.Rates = sim.Rates{
		Drop:          rapid.Float64Range(0, 0.1).Draw(rt, "drop"),
		Delay:         rapid.Float64Range(0, 0.2).Draw(rt, "delay"),
		Dup:           rapid.Float64Range(0, 0.05).Draw(rt, "dup"),
		WireFlip:      rapid.Float64Range(0, 0.05).Draw(rt, "wireflip"),
		SlowSync:      rapid.Float64Range(0, 0.05).Draw(rt, "slowsync"),
		LateNotify:    rapid.Float64Range(0, 0.5).Draw(rt, "latenotify"),
		LateNotifyMax: time.Duration(rapid.IntRange(1, 100).Draw(rt, "latenotifymax")) * time.Millisecond,
	}
	return o
}

// rapidSteps are the actions of the state machine; check runs after each.
func rapidSteps(s *sim.Sim, schedule *[]string, check func()) map[string]func(*rapid.T) {
	n := len(s.Nodes)
	node := func(rt *rapid.T, label string) int { return rapid.IntRange(1, n).Draw(rt, label) }
	log := func(format string, args ...any) {
		*schedule = append(*schedule, fmt.Sprintf("%v ", s.Now())+fmt.Sprintf(format, args...))
	}
	kinds := []sim.OpKind{sim.OpGet, sim.OpPut, sim.OpDelete, sim.OpCAS, sim.OpCASRev}
	ops := func(lo, hi int) func(*rapid.T) {
		return func(rt *rapid.T) {
			for k, count := 0, rapid.IntRange(lo, hi).Draw(rt, "ops"); k < count; k++ {
				c := rapid.IntRange(0, s.Clients()-1).Draw(rt, "client")
				kind := rapid.SampledFrom(kinds).Draw(rt, "kind")
				key := rapid.IntRange(0, 3).Draw(rt, "key")
				fresh := rapid.Bool().Draw(rt, "fresh")
				if s.StartOp(c, kind, key, fresh) {
					log("c%d %v k%d fresh=%v", c, kind, key, fresh)
				}
				s.Advance(time.Duration(rapid.IntRange(0, 5).Draw(rt, "gap-ms")) * time.Millisecond)
			}
		}
	}
	advance := func(lo, hi int) func(*rapid.T) {
		return func(rt *rapid.T) {
			d := time.Duration(rapid.IntRange(lo, hi).Draw(rt, "ms")) * time.Millisecond
			s.Advance(d)
			log("advance %v", d)
		}
	}
	return map[string]func(*rapid.T){
		"ops":     ops(1, 4),
		"burst":   ops(5, 20),
		"advance": advance(1, 50),
		"wait":    advance(100, 600),
		"crash": func(rt *rapid.T) {
			id, at := node(rt, "node"), rapid.IntRange(0, 24).Draw(rt, "at-io-op")
			s.Crash(id, at)
			log("crash n%d at I/O op %d", id, at)
		},
		"partition": func(rt *rapid.T) {
			kind, a, b := rapid.IntRange(0, 3).Draw(rt, "partition"), node(rt, "a"), node(rt, "b")
			s.Partition(kind, a, b)
			log("partition %d n%d n%d", kind, a, b)
		},
		"flip": func(rt *rapid.T) {
			id := node(rt, "node")
			s.Flip(id)
			log("flip n%d", id)
		},
		"eio": func(rt *rapid.T) {
			id, hs := node(rt, "node"), rapid.Bool().Draw(rt, "hardstate")
			s.FailSync(id, hs)
			log("eio n%d hardstate=%v", id, hs)
		},
		"diskfull": func(rt *rapid.T) {
			id := node(rt, "node")
			s.FillDisk(id)
			log("disk full n%d", id)
		},
		"": func(*rapid.T) { check() },
	}
}

// rapidFailure is the last failing case rapid ran (after shrinking: the
// shrunk one, which rapid runs last).
type rapidFailure struct {
	opts     sim.Options
	s        *sim.Sim
	v        sim.Verdict
	schedule []string
}

// write writes the case: the options and schedule, the trace, the history
// and porcupine's visualization.
func (f *rapidFailure) write(dir string) (string, error) {
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "durableraft-rapid")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	o := f.opts
	o.Log = nil
	opts, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return "", err
	}
	text := fmt.Sprintf("violation: %s\nseed: %d\nnodes: %d\noptions: %s\nschedule:\n  %s\n", f.v.Violation, o.Seed, o.N, opts,
		strings.Join(f.schedule, "\n  "))
	if err := os.WriteFile(filepath.Join(dir, "case.txt"), []byte(text), 0o644); err != nil {
		return "", err
	}
	if err := sim.WriteFiles(f.s, f.v, filepath.Join(dir, "trace.ndjson"), filepath.Join(dir, "history.ndjson"), filepath.Join(dir, "history.html")); err != nil {
		return "", err
	}
	return dir, nil
}
