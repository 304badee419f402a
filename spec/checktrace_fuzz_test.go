package spec

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/durableraft/durableraft/trace"
)

// FuzzCheckTrace: check-trace reads files from other programs (impl/ runs, hand-edited
// traces), so no input may make it panic or run away; what it accepts is closed under
// prefixes (every prefix of an accepted behaviour is a behaviour); and a trace gets the
// same verdict in version 1 and in version 2 (the log rebuilt from changes is the log
// logged whole). The seed corpus is the committed counterexamples (version 1), the
// version 2 traces of tla/traces, and a short long-log run.
func FuzzCheckTrace(f *testing.F) {
	var paths []string
	for _, glob := range []string{filepath.Join("testdata", "counterexamples", "*.ndjson"),
		filepath.Join("..", "tla", "traces", "*.ndjson"), filepath.Join("..", "tla", "traces", "mutated", "*.ndjson")} {
		more, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		paths = append(paths, more...)
	}
	if len(paths) < 40 {
		f.Fatalf("%d traces for the corpus, want the counterexamples and tla/traces", len(paths))
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) <= 1<<15 {
			f.Add(b)
		}
	}
	f.Add(longTrace(f, 300, 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<15 {
			return
		}
		events, err := trace.Decode(bytes.NewReader(data))
		if err != nil || len(events) > 400 {
			return
		}
		verdict := CheckTrace(events)
		if other, err := otherVersion(events); err == nil {
			if got := CheckTrace(other); (got == nil) != (verdict == nil) {
				t.Fatalf("version %d: %v; version %d: %v", events[0].V, verdict, other[0].V, got)
			}
		}
		if verdict != nil {
			return
		}
		for n := len(events) - 1; n >= 1; n-- {
			if err := CheckTrace(events[:n]); err != nil {
				t.Fatalf("the trace is accepted but its prefix of %d events is not: %v", n, err)
			}
		}
	})
}

// otherVersion is the trace in the other version, through its encoding.
func otherVersion(events []trace.Event) ([]trace.Event, error) {
	other := trace.ToVersion2(events)
	if events[0].V == trace.Version {
		var err error
		if other, err = trace.ToVersion1(events); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	w := trace.NewWriterVersion(&b, other[0].V)
	for _, e := range other {
		if err := w.Write(e); err != nil {
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return trace.Decode(&b)
}
