package spec

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/durableraft/durableraft/trace"
)

// FuzzCheckTrace: check-trace reads files from other programs (impl/ runs, hand-edited
// traces), so no input may make it panic or run away, and what it accepts is closed
// under prefixes: every prefix of an accepted behaviour is a behaviour. The seed corpus
// is the committed counterexamples and their one-line edits.
func FuzzCheckTrace(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "counterexamples", "*.ndjson"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no counterexamples for the corpus: %v", err)
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
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<15 {
			return
		}
		events, err := trace.Decode(bytes.NewReader(data))
		if err != nil || len(events) > 200 {
			return
		}
		if CheckTrace(events) != nil {
			return
		}
		for n := len(events) - 1; n >= 1; n-- {
			if err := CheckTrace(events[:n]); err != nil {
				t.Fatalf("the trace is accepted but its prefix of %d events is not: %v", n, err)
			}
		}
	})
}
