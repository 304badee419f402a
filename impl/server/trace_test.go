package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/trace"
)

// TestResumeClock: a boot resumes the trace's logical clock from the last
// whole clocked line of the node's latest trace: a torn last line is
// skipped, a latest file with no whole line falls back to the one before,
// another node's files and foreign names are ignored, a line longer than
// the first window is found by widening it.
func TestResumeClock(t *testing.T) {
	line := func(clock int, pad int) string {
		return fmt.Sprintf(`{"v":2,"seq":%d,"action":"Timeout","node":"s1","pad":"%s","clock":%d}`+"\n", clock, strings.Repeat("x", pad), clock)
	}
	rows := []struct {
		name  string
		files map[string]string
		want  uint64
	}{
		{"no traces", nil, 0},
		{"one file", map[string]string{"n1-100.ndjson": line(1, 0) + line(2, 0) + line(3, 0)}, 3},
		{"torn last line", map[string]string{"n1-100.ndjson": line(1, 0) + line(2, 0) + `{"v":2,"seq":2,"act`}, 2},
		{"the latest boot by its nanoseconds", map[string]string{"n1-99.ndjson": line(9, 0), "n1-100.ndjson": line(12, 0)}, 12},
		{"latest torn in its Init", map[string]string{"n1-100.ndjson": line(7, 0), "n1-200.ndjson": `{"v":2,"seq":0,"act`}, 7},
		{"other nodes and names ignored", map[string]string{"n1-100.ndjson": line(5, 0), "n2-300.ndjson": line(50, 0),
			"n1-x.ndjson": line(60, 0), "n1-400.json": line(70, 0)}, 5},
		{"a line longer than the window", map[string]string{"n1-100.ndjson": line(4, 0) + line(5, 3*traceTailBytes)}, 5},
		{"unclocked trace", map[string]string{"n1-100.ndjson": `{"v":2,"seq":0,"action":"Init"}` + "\n"}, 0},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range r.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := resumeClock(dir, 1)
			if err != nil || got != r.want {
				t.Fatalf("resumeClock = %d, %v; want %d", got, err, r.want)
			}
		})
	}
}

// TestTraceSinkClock: every event carries the clock after adding one, an
// observed clock raises it, a stamp reads it, and a sink opened again in the
// same directory goes on from its predecessor's last event.
func TestTraceSinkClock(t *testing.T) {
	dir := t.TempDir()
	voters := []raft.NodeID{1, 2, 3}
	s, err := openTrace(dir, 1, voters, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	s.Event(trace.Event{Action: "Timeout", Node: "s1"})
	if got := s.Stamp(); got != 2 {
		t.Fatalf("stamp after Init and one event: %d, want 2", got)
	}
	s.Observe(40)
	s.Observe(10) // never back
	s.Event(trace.Event{Action: "Timeout", Node: "s1"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := openTrace(dir, 1, voters, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	paths, err := nodeTraces(dir, 1)
	if err != nil || len(paths) != 2 {
		t.Fatalf("traces %v, %v", paths, err)
	}
	var clocks []uint64
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := trace.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			clocks = append(clocks, e.Clock)
		}
	}
	if want := []uint64{1, 2, 41, 42}; fmt.Sprint(clocks) != fmt.Sprint(want) {
		t.Fatalf("clocks %v, want %v", clocks, want)
	}
}
