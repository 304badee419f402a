package spec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/durableraft/durableraft/trace"
)

// TestCounterexampleStories replays the failure stories scripts/bugs.sh
// wrote to testdata/counterexamples: each is a behaviour of the protocol
// with its fixes switched off, and is not one of the protocol with every
// fix on (the step the fix forbids is rejected).
func TestCounterexampleStories(t *testing.T) {
	paths, err := filepath.Glob("testdata/counterexamples/*.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no counterexamples in testdata/counterexamples (run scripts/bugs.sh)")
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			events, err := trace.Decode(f)
			if err != nil {
				t.Fatal(err)
			}
			if events[0].Config.Bugs == "" {
				t.Fatal("a counterexample without a bug switch")
			}
			if err := CheckTrace(events); err != nil {
				t.Fatalf("the story is not a behaviour of its own model: %v", err)
			}
			fixed := *events[0].Config
			fixed.Bugs = ""
			events[0].Config = &fixed
			err = CheckTrace(events)
			if err == nil {
				t.Fatal("the protocol with every fix on accepts the story")
			}
			t.Logf("with every fix on: %v", firstLine(err.Error()))
		})
	}
}

func firstLine(s string) string {
	for k := range s {
		if s[k] == '\n' {
			return s[:k]
		}
	}
	return s
}
