package viz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

func buildFile(t *testing.T, path string, opt Options) *Page {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Build([]Source{{Name: path, R: f}}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func glob(t *testing.T, patterns ...string) []string {
	var out []string
	for _, p := range patterns {
		m, err := filepath.Glob(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Fatalf("no files match %v", patterns)
	}
	return out
}

// checkLinks asserts what the page's arrows rest on: every message was
// sent before each event that handles it, an event's In and Out name
// messages that name it back, and a message leaves the bag at most once.
func checkLinks(t *testing.T, p *Page) {
	t.Helper()
	for id, m := range p.Msgs {
		for k, h := range m.Handled {
			if h <= m.Send || (k > 0 && h <= m.Handled[k-1]) {
				t.Fatalf("message %d (sent at %d) handled at %v", id, m.Send, m.Handled)
			}
			if p.Events[h].In != id+1 {
				t.Fatalf("message %d handled by event %d, which handles %d", id, h, p.Events[h].In-1)
			}
		}
		if m.End >= 0 && m.End != m.Handled[len(m.Handled)-1] {
			t.Fatalf("message %d ends at %d, last handled at %v", id, m.End, m.Handled)
		}
	}
	for k, e := range p.Events {
		for _, id := range e.Out {
			if p.Msgs[id].Send != k {
				t.Fatalf("event %d sends message %d, whose send is %d", k, id, p.Msgs[id].Send)
			}
		}
	}
}

// Every trace the project keeps is drawn with every receive matched to its
// send by content: the reconstruction of what each step sends is the
// spec's.
func TestEveryKeptTraceMatchesByContent(t *testing.T) {
	paths := glob(t, "../spec/testdata/counterexamples/*.ndjson", "../tla/traces/*.ndjson", "../tla/traces/impl/*.ndjson",
		"../tla/traces/v1/*.ndjson", "../tla/traces/v1/impl/*.ndjson")
	for _, path := range paths {
		p := buildFile(t, path, Options{Check: true})
		if p.Stats.Approx != 0 || p.Stats.Unmatched != 0 {
			t.Errorf("%s: %d receives matched by envelope, %d without a send", path, p.Stats.Approx, p.Stats.Unmatched)
		}
		if !p.Check.OK {
			t.Errorf("%s: the checker rejects a kept trace: %s", path, p.Check.Reason)
		}
		checkLinks(t, p)
	}
	t.Logf("%d traces", len(paths))
}

// A mutated trace is drawn to its end, with the event the spec rejects
// marked.
func TestRejectedEventMarked(t *testing.T) {
	for _, path := range glob(t, "../tla/traces/mutated/*.ndjson", "../tla/traces/impl/mutated/*.ndjson") {
		p := buildFile(t, path, Options{Check: true})
		if p.Check.OK || p.Check.Event < 0 || p.Check.Event >= len(p.Events) {
			t.Errorf("%s: check %+v", path, p.Check)
		}
	}
}

// A counterexample of the explorer ends at the first state that breaks an
// invariant: the replay through the explorer's model finds the violation
// at its last event, and nothing before it.
func TestCounterexampleInvariants(t *testing.T) {
	for _, path := range glob(t, "../spec/testdata/counterexamples/*.ndjson") {
		p := buildFile(t, path, Options{Invariants: true})
		inv := p.Inv
		if inv == nil || inv.Stop != "" || inv.Upto != len(p.Events) {
			t.Fatalf("%s: replay %+v of %d events", path, inv, len(p.Events))
		}
		last := len(p.Events) - 1
		atLast := false
		for _, v := range inv.First {
			if v.Event == last {
				atLast = true
			}
			if v.Event > last || v.Detail == "" {
				t.Errorf("%s: %+v", path, v)
			}
		}
		if !atLast {
			t.Errorf("%s: no invariant breaks at the last event: %+v", path, inv.First)
		}
		if !strings.Contains(path, ".loss") && len(inv.Marks) != 1 {
			// explore stops at the first violating state
			t.Errorf("%s: violations at %v, want at the last event only", path, inv.Marks)
		}
	}
}

// The invariants hold along a trace the spec accepts with every fix on.
func TestInvariantsHoldOnFixedRuns(t *testing.T) {
	for _, path := range glob(t, "../tla/traces/walk-*.ndjson", "../tla/traces/impl/*.ndjson") {
		p := buildFile(t, path, Options{Invariants: true})
		if len(p.Inv.First) != 0 || p.Inv.Stop != "" {
			t.Errorf("%s: %+v", path, p.Inv)
		}
	}
}

// A version 1 trace and its version 2 copy draw the same page.
func TestVersionsDrawAlike(t *testing.T) {
	for _, v1 := range glob(t, "../tla/traces/v1/*.ndjson", "../tla/traces/v1/impl/*.ndjson") {
		v2 := strings.Replace(v1, "/v1/", "/", 1)
		if _, err := os.Stat(v2); err != nil {
			continue
		}
		a, b := buildFile(t, v1, Options{}), buildFile(t, v2, Options{})
		a.Version, b.Version, a.Files, b.Files, a.Title, b.Title = 0, 0, nil, nil, "", ""
		a.Config, b.Config = nil, nil // version 2 configs carry names and budgets
		// A reboot logs its whole log in impl/'s version 2 traces: compare
		// the logs, not their changes.
		for _, p := range []*Page{a, b} {
			for k, log := range wholeLogs(p) {
				if st := p.Events[k].State; st != nil {
					st.Keep, st.Append = 0, [][]int{append([]int{-1}, log...)}
				}
			}
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("%s and %s draw differently", v1, v2)
		}
	}
}

// splitByNode writes each node's steps of a whole-cluster trace to a file
// of its own, as raftd would (the network's steps go with their
// destination), and merges them back.
func TestMergeOneFilePerNode(t *testing.T) {
	for _, path := range glob(t, "../tla/traces/impl/random-seed-00*.ndjson", "../tla/traces/impl/scenario-*.ndjson") {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		events, err := trace.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		byNode := map[string][]trace.Event{}
		for _, e := range events[1:] {
			byNode[e.Node] = append(byNode[e.Node], e)
		}
		var sources []Source
		for _, n := range events[0].Config.ServerNames() {
			var b bytes.Buffer
			w := trace.NewWriter(&b)
			w.Write(events[0])
			for _, e := range byNode[n] {
				w.Write(e)
			}
			w.Flush()
			sources = append(sources, Source{Name: n + ".ndjson", R: &b})
		}
		var merged bytes.Buffer
		p, err := Build(sources, Options{Check: true, Merged: &merged})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		back, err := trace.Decode(&merged)
		if err != nil || len(back) != len(events) {
			t.Fatalf("%s: the merged trace: %d events, %v", path, len(back), err)
		}
		if err := spec.CheckTrace(back); (err == nil) != p.Check.OK {
			t.Fatalf("%s: the merged trace's verdict %v, the page's %+v", path, err, p.Check)
		}
		if !p.Merged || len(p.Events) != len(events)-1 {
			t.Fatalf("%s: merged %d events of %d", path, len(p.Events), len(events)-1)
		}
		if p.Stats.Unmatched != 0 {
			t.Errorf("%s: %d receives before their send after the merge", path, p.Stats.Unmatched)
		}
		checkLinks(t, p)
	}
}

// clockedFiles splits a whole-cluster trace into one file per node, every
// line clocked with its position in the run (a Lamport clock: a total
// order), node s1's steps split at its event cut into two boots; edit may
// change an event's clock before it is written.
func clockedFiles(t *testing.T, path string, cut int, edit func(node string, k int, e *trace.Event)) ([]Source, []trace.Event) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	events, err := trace.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	byNode := map[string][]trace.Event{}
	for k, e := range events[1:] {
		e.Clock = uint64(2 * (k + 2)) // room for a boot's Init between two events
		byNode[e.Node] = append(byNode[e.Node], e)
	}
	var sources []Source
	for id, n := range events[0].Config.ServerNames() {
		evs := byNode[n]
		boots := [][]trace.Event{evs}
		if n == "s1" && cut > 0 && cut < len(evs) {
			boots = [][]trace.Event{evs[:cut], evs[cut:]}
		}
		for b, part := range boots {
			var buf bytes.Buffer
			w := trace.NewWriter(&buf)
			init := events[0]
			init.Clock = 1
			if b > 0 {
				init.Clock = part[0].Clock - 1
			}
			w.Write(init)
			for k := range part {
				if edit != nil {
					edit(n, k, &part[k])
				}
				w.Write(part[k])
			}
			w.Flush()
			sources = append(sources, Source{Name: fmt.Sprintf("n%d-%d.ndjson", id+1, 100+b), R: &buf})
		}
	}
	return sources, events
}

// TestMergeByClock: files whose every line carries a logical clock merge
// in clock order (here the run's own order, back exactly), a node's boots
// in order; a clock that goes back within a file or at a boot, and files
// with and without clocks, are refused.
func TestMergeByClock(t *testing.T) {
	const path = "../tla/traces/impl/random-seed-001.ndjson"
	sources, events := clockedFiles(t, path, 5, nil)
	var merged bytes.Buffer
	p, err := Build(sources, Options{Check: true, Merged: &merged})
	if err != nil {
		t.Fatal(err)
	}
	back, err := trace.Decode(&merged)
	if err != nil || len(back) != len(events) {
		t.Fatalf("the merged trace: %d events of %d, %v", len(back), len(events), err)
	}
	for k := 1; k < len(back); k++ {
		if back[k].Action != events[k].Action || back[k].Node != events[k].Node {
			t.Fatalf("merged event %d is %s at %s, the run's %s at %s", k, back[k].Action, back[k].Node, events[k].Action, events[k].Node)
		}
	}
	if !p.Check.OK || !strings.Contains(strings.Join(p.Notes, " "), "logical clocks") {
		t.Fatalf("check %+v, notes %v", p.Check, p.Notes)
	}
	rows := []struct {
		name string
		edit func(node string, k int, e *trace.Event)
		want string
	}{
		{"back within a file", func(node string, k int, e *trace.Event) {
			if node == "s2" && k == 3 {
				e.Clock = 1
			}
		}, "clock goes back, to 1"},
		{"back at a boot", func(node string, k int, e *trace.Event) {
			if node == "s1" && k == 4 {
				e.Clock = 1 << 20 // the first boot's last clock above the second boot's Init
			}
		}, "clock goes back at its boot"},
		{"one file unclocked", func(node string, k int, e *trace.Event) {
			if node == "s3" {
				e.Clock = 0
			}
		}, "carry a logical clock and"},
	}
	for _, r := range rows {
		sources, _ := clockedFiles(t, path, 5, r.edit)
		if _, err := Build(sources, Options{}); err == nil || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s: err = %v, want %q", r.name, err, r.want)
		}
	}
}

// Files of two clusters are not merged, nor files holding several nodes'
// steps.
func TestMergeRefuses(t *testing.T) {
	nodeFile := func(path, node string) Source {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		events, err := trace.Decode(f)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		w := trace.NewWriter(&b)
		w.Write(events[0])
		for _, e := range events[1:] {
			if e.Node == node || node == "" {
				w.Write(e)
			}
		}
		w.Flush()
		return Source{Name: path, R: &b}
	}
	_, err := Build([]Source{nodeFile("../tla/traces/impl/random-seed-001.ndjson", "s1"),
		nodeFile("../tla/traces/walk-raft-s3-017.ndjson", "s2")}, Options{})
	if err == nil || !strings.Contains(err.Error(), "another cluster") {
		t.Fatalf("two clusters: err = %v", err)
	}
	_, err = Build([]Source{nodeFile("../tla/traces/impl/random-seed-001.ndjson", ""),
		nodeFile("../tla/traces/impl/random-seed-001.ndjson", "s2")}, Options{})
	if err == nil || !strings.Contains(err.Error(), "holds steps of") {
		t.Fatalf("a whole run among per-node files: err = %v", err)
	}
}

// Drops, duplicates and a receive whose send is not in the run.
func TestNetworkMarks(t *testing.T) {
	init := `{"v":2,"seq":0,"action":"Init","config":{"profile":"raft","servers":2,"values":1}}`
	st := `"state":{"currentTerm":%s,"state":"%s","votedFor":"%s","logKeep":0,"commitIndex":0}`
	line := func(seq int, rest string) string { return `{"v":2,"seq":` + itoa(seq) + `,` + rest + "}" }
	rvq := `"msg":{"mtype":"RequestVoteRequest","mterm":2,"mlastLogTerm":0,"mlastLogIndex":0,"msource":"s1","mdest":"s2"}`
	lines := []string{init,
		line(1, `"action":"Timeout","node":"s1",`+sprintf(st, "2", "Candidate", "Nil")),
		line(2, `"action":"RequestVote","node":"s1","peer":"s2",`+sprintf(st, "2", "Candidate", "Nil")),
		line(3, `"action":"DuplicateMessage","node":"s2","peer":"s1",`+rvq),
		line(4, `"action":"DropMessage","node":"s2","peer":"s1",`+rvq),
		line(5, `"action":"UpdateTerm","node":"s2","peer":"s1",`+rvq+`,`+sprintf(st, "2", "Follower", "Nil")),
		line(6, `"action":"HandleRequestVoteRequest","node":"s2","peer":"s1",`+rvq+`,`+sprintf(st, "2", "Follower", "s1")),
		// a response from s2 in term 3, which no step sent
		line(7, `"action":"DropMessage","node":"s1","peer":"s2","msg":{"mtype":"RequestVoteResponse","mterm":3,"mvoteGranted":false,"msource":"s2","mdest":"s1"}`),
	}
	p, err := Build([]Source{{Name: "net", R: strings.NewReader(strings.Join(lines, "\n") + "\n")}}, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	checkLinks(t, p)
	s := p.Stats
	if s.Drops != 2 || s.Dups != 1 || s.Unmatched != 1 || s.Exact != 4 || s.InFlight != 1 {
		t.Fatalf("stats %+v", s)
	}
	req, cp := p.Msgs[p.Events[1].Out[0]], p.Msgs[p.Events[2].In-1]
	if len(req.Handled) != 2 || p.Events[2].InKind != "d" || p.Events[3].InKind != "x" || !p.Msgs[p.Events[3].In-1].Dropped {
		t.Fatalf("request %+v, events %+v", req, p.Events[2:4])
	}
	_ = cp
	if p.Events[4].InKind != "h" || p.Events[5].InKind != "c" {
		t.Fatalf("UpdateTerm %q, handler %q", p.Events[4].InKind, p.Events[5].InKind)
	}
	if len(p.Events[5].Out) != 1 || !p.Msgs[p.Events[5].Out[0]].Granted {
		t.Fatalf("the vote reply: %+v", p.Events[5].Out)
	}
	if p.Check.OK || p.Check.Event != 6 {
		t.Fatalf("check %+v: the spec rejects the drop of a message never sent", p.Check)
	}
}

// The page is self-contained and its data cannot end the script early.
func TestWritePage(t *testing.T) {
	p := buildFile(t, "../spec/testdata/counterexamples/self-counts-appended.ndjson", Options{Check: true, Invariants: true})
	p.Title = `</script><script>alert(1)</script>`
	p.Notes = []string{`</script>`}
	var b bytes.Buffer
	if err := WritePage(&b, p); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if strings.Count(html, "</script>") != 2 { // the data's and the code's
		t.Fatalf("%d </script> in the page", strings.Count(html, "</script>"))
	}
	for _, bad := range []string{"http://", "https://", "{{", "src=", "<link"} {
		if strings.Contains(html, bad) && !(bad == "http://" && strings.Contains(html, `xmlns="http://www.w3.org/2000/svg"`) && strings.Count(html, bad) == 1) {
			t.Errorf("the page contains %q: it must need no network", bad)
		}
	}
	start := strings.Index(html, `<script id="data" type="application/json">`)
	end := strings.Index(html[start:], "</script>")
	var back Page
	if err := json.Unmarshal([]byte(html[start+len(`<script id="data" type="application/json">`):start+end]), &back); err != nil {
		t.Fatal(err)
	}
	if back.Title != p.Title || len(back.Events) != len(p.Events) {
		t.Fatalf("data round trip: %q, %d events", back.Title, len(back.Events))
	}
}

// A run of 10^5 events is built and written: the page stays a page.
func TestLargeTrace(t *testing.T) {
	data := steadyTrace(t, 100_000)
	p, err := Build([]Source{{Name: "steady", R: bytes.NewReader(data)}}, Options{Check: true, Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) < 99_990 || !p.Check.OK || p.Stats.Approx+p.Stats.Unmatched != 0 || p.Inv.Stop == "" {
		t.Fatalf("%d events, check %+v, stats %+v, inv stop %q", len(p.Events), p.Check, p.Stats, p.Inv.Stop)
	}
	var b bytes.Buffer
	if err := WritePage(&b, p); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events, %d MB of trace, %d MB of page", len(p.Events), len(data)>>20, b.Len()>>20)
	if b.Len() > 3*len(data)+1<<20 {
		t.Fatalf("the page (%d bytes) is more than three times the trace (%d)", b.Len(), len(data))
	}
}

func TestMaxEvents(t *testing.T) {
	data := steadyTrace(t, 200)
	_, err := Build([]Source{{Name: "steady", R: bytes.NewReader(data)}}, Options{MaxEvents: 100})
	if err == nil || !strings.Contains(err.Error(), "more than 100 events") {
		t.Fatalf("err = %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// wholeLogs is each event's log (terms and values interleaved), rebuilt
// from the changes.
func wholeLogs(p *Page) map[int][]int {
	cur := map[int][]int{}
	out := map[int][]int{}
	for k, e := range p.Events {
		if e.State == nil {
			continue
		}
		log := append([]int(nil), cur[e.Node][:2*e.State.Keep]...)
		for _, r := range e.State.Append {
			for _, v := range r[1:] {
				log = append(log, r[0], v)
			}
		}
		cur[e.Node], out[k] = log, log
	}
	return out
}

// FuzzBuild: no input makes the page builder panic, whether read as one
// trace or as two files to merge, and whatever it builds writes a page.
func FuzzBuild(f *testing.F) {
	for _, p := range []string{"../spec/testdata/counterexamples/self-counts-appended.ndjson", "../tla/traces/impl/scenario-bug661.ndjson",
		"../tla/traces/v1/walk-durable-s3-006.ndjson", "testdata/raftd-demo/n1-1796131742140607113.ndjson"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(0))
		f.Add(b, uint16(len(b)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		sources := []Source{{Name: "a", R: bytes.NewReader(data)}}
		if k := int(split); k > 0 && k < len(data) {
			// the second file gets the first's line 0, as a raftd file has its own Init
			line0, _, _ := bytes.Cut(data, []byte("\n"))
			second := append(append(append([]byte{}, line0...), '\n'), data[k:]...)
			sources = []Source{{Name: "a", R: bytes.NewReader(data[:k])}, {Name: "b", R: bytes.NewReader(second)}}
		}
		p, err := Build(sources, Options{Check: true, Invariants: true, MaxEvents: 2000})
		if err != nil {
			return
		}
		if err := WritePage(io.Discard, p); err != nil {
			t.Fatal(err)
		}
	})
}
