package tla

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/trace"
)

// The version 1 traces of traces/v1/ are the trace sets as they were
// before version 2 (docs/trace-format.md): they must keep their verdicts,
// and the version 2 traces of traces/ must be the same behaviours.

func readTrace(t *testing.T, path string) []trace.Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	events, err := trace.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return events
}

func encodeEvents(t *testing.T, events []trace.Event) []byte {
	t.Helper()
	var b bytes.Buffer
	w := trace.NewWriterVersion(&b, events[0].V)
	for _, e := range events {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestVersion1TracesKeepTheirVerdicts: raftspec check-trace accepts every
// version 1 trace of traces/v1/ and rejects every one of its mutated/
// directories, and the same holds for each converted to version 2.
func TestVersion1TracesKeepTheirVerdicts(t *testing.T) {
	n := 0
	for _, dir := range []string{"traces/v1", "traces/v1/impl"} {
		for _, sub := range []string{"", "mutated"} {
			accept := sub == ""
			paths, _ := filepath.Glob(filepath.Join(dir, sub, "*.ndjson"))
			for _, p := range paths {
				n++
				events := readTrace(t, p)
				if events[0].V != 1 {
					t.Errorf("%s: version %d, want 1", p, events[0].V)
				}
				up := encodeEvents(t, trace.ToVersion2(events))
				for version, data := range map[int][]byte{1: encodeEvents(t, events), 2: up} {
					if err := CheckGo(data); (err == nil) != accept {
						t.Errorf("%s as version %d: accepted %v, want %v (%v)", p, version, err == nil, accept, err)
					}
				}
			}
		}
	}
	if n < 60 {
		t.Fatalf("%d version 1 traces, want the >= 60 of traces/v1", n)
	}
}

// TestVersion2TracesAreTheVersion1Ones: each version 2 trace of traces/
// that has a version 1 copy in traces/v1/ is that trace, written as log
// changes: converted back to version 1 it is the copy, byte for byte.
func TestVersion2TracesAreTheVersion1Ones(t *testing.T) {
	same := 0
	for _, pair := range [][2]string{{"traces", "traces/v1"}, {"traces/mutated", "traces/v1/mutated"},
		{"traces/impl", "traces/v1/impl"}, {"traces/impl/mutated", "traces/v1/impl/mutated"}} {
		paths, _ := filepath.Glob(filepath.Join(pair[0], "*.ndjson"))
		for _, p := range paths {
			old := filepath.Join(pair[1], filepath.Base(p))
			want, err := os.ReadFile(old)
			if err != nil {
				continue // new in version 2 (named-...)
			}
			events := readTrace(t, p)
			if events[0].V == 1 {
				continue // still written in version 1 (from spec's stories)
			}
			if c := *events[0].Config; c.Source == "impl" {
				// impl/raft declared budgets of 200 before they became
				// parameters (raft.TraceParams).
				c.Crashes, c.Corruptions = 200, 200
				events[0].Config = &c
			}
			back, err := trace.ToVersion1(events)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if got := encodeEvents(t, back); !bytes.Equal(got, want) {
				t.Errorf("%s in version 1 is not %s:\n%s", p, old, firstDiff(got, want))
			}
			same++
		}
	}
	if same < 40 {
		t.Fatalf("%d version 2 traces compared with their version 1 copies, want >= 40", same)
	}
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for k := 0; k < len(la) && k < len(lb); k++ {
		if la[k] != lb[k] {
			return "got  " + la[k] + "\nwant " + lb[k]
		}
	}
	return "lengths differ"
}
