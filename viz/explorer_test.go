package viz

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

func newTestExplorer(t *testing.T, c spec.Config, opt ExplorerOptions) (*spec.Model, *httptest.Server) {
	t.Helper()
	m, err := spec.NewModel(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(LoopbackOnly(NewExplorer(m, opt).Handler()))
	t.Cleanup(srv.Close)
	return m, srv
}

// the bounds at which bug-661 (self-counts-appended) breaks
// CommittedIsDurable: docs/durable-raft.md's table, 723 distinct states.
var bug661 = spec.Config{Profile: spec.ProfileDurable, Servers: 2, Values: 1, MaxTerm: 2, MaxLog: 1, MaxDup: 1, MaxMsgs: 1, Bugs: spec.BugSelfCountsAppended}

func get(t *testing.T, url string, out any) int {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if out != nil {
		if err := json.NewDecoder(r.Body).Decode(out); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return r.StatusCode
}

func post(t *testing.T, url, body string, out any) int {
	t.Helper()
	r, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if out != nil {
		if err := json.NewDecoder(r.Body).Decode(out); err != nil {
			t.Fatalf("POST %s: %v", url, err)
		}
	}
	return r.StatusCode
}

// Init, its successors, one step and back: what the API says of each
// state is what the model says.
func TestExplorerWalk(t *testing.T) {
	m, srv := newTestExplorer(t, bug661, ExplorerOptions{})
	var info ModelInfo
	if get(t, srv.URL+"/api/model", &info) != 200 || len(info.Servers) != 2 || len(info.Invariants) != 7 || info.Bugs != "self-counts-appended" {
		t.Fatalf("model %+v", info)
	}
	var init StateView
	if get(t, srv.URL+"/api/state?path=", &init) != 200 {
		t.Fatal("GET Init")
	}
	var want []spec.Label
	m.Next(m.Init(), func(_ spec.State, l spec.Label) { want = append(want, l) })
	if len(init.Successors) != len(want) || len(init.Path) != 0 || !init.InBounds {
		t.Fatalf("Init: %d successors, want %d; %+v", len(init.Successors), len(want), init.Path)
	}
	for k, s := range init.Successors {
		if s.Index != k || s.Label != want[k].String() {
			t.Fatalf("successor %d: %+v, want %v", k, s, want[k])
		}
	}
	for _, inv := range init.Invariants {
		if !inv.OK {
			t.Fatalf("Init breaks %s", inv.Name)
		}
	}
	// Take the first Timeout: s1 becomes a candidate of term 2.
	k := -1
	for j, s := range init.Successors {
		if s.Action == "Timeout" && s.Node == "s1" {
			k = j
			break
		}
	}
	var after StateView
	get(t, srv.URL+"/api/state?path="+itoa(k), &after)
	s1 := after.Servers[0].Vars
	if s1.CurrentTerm != 2 || s1.State != "Candidate" || len(after.Steps) != 1 || !strings.HasPrefix(after.Steps[0], "Timeout(s1)") {
		t.Fatalf("after Timeout(s1): %+v, steps %v", s1, after.Steps)
	}
	if after.Fingerprint != init.Successors[k].New {
		t.Fatalf("the state reached is %s, the successor said %s", after.Fingerprint, init.Successors[k].New)
	}
}

// Bad paths are refused with a reason, not a crash.
func TestExplorerBadRequests(t *testing.T) {
	_, srv := newTestExplorer(t, bug661, ExplorerOptions{})
	var e map[string]string
	for _, p := range []string{"x", "1..2", "-1", "99999", strings.Repeat("0.", maxPath) + "0", "0.999"} {
		e = nil
		if code := get(t, srv.URL+"/api/state?path="+p, &e); code != 400 || e["error"] == "" {
			t.Errorf("path %.40q: %d %v", p, code, e)
		}
	}
	for _, body := range []string{`{"mode":"bfs"}`, `{"invariant":"Nope"}`, `{"mode":"explore","extra":1}`, `not json`} {
		e = nil
		if code := post(t, srv.URL+"/api/check", body, &e); code != 400 || e["error"] == "" {
			t.Errorf("check %s: %d %v", body, code, e)
		}
	}
	if code := get(t, srv.URL+"/nope", &e); code != 404 {
		t.Errorf("GET /nope: %d", code)
	}
	req, _ := http.NewRequest("DELETE", srv.URL+"/api/state", nil)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 405 && r.StatusCode != 404 {
		t.Errorf("DELETE /api/state: %d", r.StatusCode)
	}
	// A request naming another host is refused (DNS rebinding).
	req, _ = http.NewRequest("GET", srv.URL+"/api/model", nil)
	req.Host = "attacker.example:80"
	r, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 403 {
		t.Errorf("Host attacker.example: %d", r.StatusCode)
	}
}

// Explore finds bug-661's counterexample; the path it answers leads to a
// state that breaks the invariant, and only its last step does.
func TestExplorerJumpsToCounterexample(t *testing.T) {
	_, srv := newTestExplorer(t, bug661, ExplorerOptions{})
	for _, mode := range []string{"explore", "simulate"} {
		var res CheckResult
		if code := post(t, srv.URL+"/api/check", `{"mode":"`+mode+`","invariant":"CommittedIsDurable"}`, &res); code != 200 {
			t.Fatalf("%s: %d", mode, code)
		}
		if !res.Violation || res.Invariant != "CommittedIsDurable" || len(res.Path) == 0 {
			t.Fatalf("%s: %+v", mode, res)
		}
		if mode == "explore" && !strings.HasPrefix(res.Summary, "distinct=723 ") {
			t.Fatalf("explore: %s, want docs/durable-raft.md's 723 distinct states", res.Summary)
		}
		var at StateView
		get(t, srv.URL+"/api/state?path="+pathString(res.Path), &at)
		broken := ""
		for _, inv := range at.Invariants {
			if !inv.OK {
				broken += inv.Name
			}
		}
		if !strings.Contains(broken, "CommittedIsDurable") {
			t.Fatalf("%s: the state at the path breaks %q", mode, broken)
		}
		var before StateView
		get(t, srv.URL+"/api/state?path="+pathString(res.Path[:len(res.Path)-1]), &before)
		for _, inv := range before.Invariants {
			if mode == "explore" && !inv.OK {
				t.Fatalf("explore: the state before the last step breaks %s already", inv.Name)
			}
		}
	}
}

// A counterexample file maps to a path whose states are the trace's.
func TestTracePath(t *testing.T) {
	for _, path := range glob(t, "../spec/testdata/counterexamples/*.ndjson") {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		events, err := trace.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		c := events[0].Config
		p, _ := spec.ParseProfile(c.Profile)
		bugs, _ := spec.ParseBugs(c.Bugs)
		m, err := spec.NewModel(spec.Config{Profile: p, Servers: c.Servers, Values: c.Values, MaxTerm: 3, MaxLog: 2, MaxDup: 2, MaxMsgs: 3,
			Crashes: c.Crashes, Corruptions: c.Corruptions, PowerLosses: c.PowerLosses, Bugs: bugs, Production: c.Production,
			Membership: c.Membership, InitVoters: c.InitVoters})
		if err != nil {
			t.Fatal(err)
		}
		tp, err := TracePath(m, events)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(tp) != len(events)-1 {
			t.Fatalf("%s: a path of %d steps for %d events", path, len(tp), len(events)-1)
		}
		x := NewExplorer(m, ExplorerOptions{})
		steps, err := x.walk(tp)
		if err != nil {
			t.Fatal(err)
		}
		last := steps[len(steps)-1]
		if last.Label.Action.String() != events[len(events)-1].Action {
			t.Fatalf("%s: the path ends with %v, the trace with %s", path, last.Label, events[len(events)-1].Action)
		}
		broken := false
		invs, _ := m.InvariantsFor("")
		for _, inv := range invs {
			if inv.Check(m, last.State) != "" {
				broken = true
			}
		}
		if !broken {
			t.Fatalf("%s: the counterexample's last state breaks no invariant", path)
		}
	}
}

func TestExplorerPageSelfContained(t *testing.T) {
	_, srv := newTestExplorer(t, bug661, ExplorerOptions{})
	r, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	html := string(b)
	if r.StatusCode != 200 || !strings.Contains(html, "window.explorer") || strings.Contains(html, "{{") ||
		strings.Contains(html, "src=") || strings.Contains(html, "https://") {
		t.Fatalf("GET /: %d, %d bytes", r.StatusCode, len(html))
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("CSP %q", csp)
	}
}

func pathString(p []int) string {
	var parts []string
	for _, x := range p {
		parts = append(parts, itoa(x))
	}
	return strings.Join(parts, ".")
}
