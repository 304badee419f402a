package viz

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/durableraft/durableraft/conformance/sim"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/internal/cdp"
	"github.com/durableraft/durableraft/trace"
)

var screenshots = flag.String("screenshots", "", "write the browser tests' screenshots (PNG) into this directory (make screenshots: docs/img)")

// browser starts headless Chromium, or skips the test with one line where
// there is none.
func browser(t *testing.T) (*cdp.Browser, context.Context) {
	t.Helper()
	path, ok := cdp.Find()
	if !ok {
		t.Skip("no chromium on PATH (Debian: apt-get install chromium): the browser tests are skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	b, err := cdp.Start(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b, ctx
}

// open writes a run's page to a file and loads it in a new tab.
func open(t *testing.T, ctx context.Context, b *cdp.Browser, p *Page, w, h int) *cdp.Page {
	t.Helper()
	file := filepath.Join(t.TempDir(), "run.html")
	var buf bytes.Buffer
	if err := WritePage(&buf, p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tab, err := b.NewPage(ctx, w, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Navigate(ctx, "file://"+file); err != nil {
		t.Fatal(err)
	}
	var ok bool
	if err := tab.Eval(ctx, "typeof window.viz === 'object'", &ok); err != nil || !ok {
		t.Fatalf("the page's script did not run: %v", err)
	}
	return tab
}

type vizInfo struct {
	Lanes, Events, Messages, Segments, Cur int
	Names                                  []string
	Rendered                               struct{ Lanes, Arrows, Events, Rows int }
}

func info(t *testing.T, ctx context.Context, tab *cdp.Page) vizInfo {
	t.Helper()
	var in vizInfo
	if err := tab.Eval(ctx, "viz.info()", &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// segments is how many arrows the page draws in all: one per (message,
// event handling it), one per message in flight at the end.
func segments(p *Page) int {
	n := 0
	for _, m := range p.Msgs {
		n += len(m.Handled)
		if m.End < 0 && m.Send >= 0 {
			n++
		}
	}
	return n
}

// nodeVars reads what the panel shows of each node.
func nodeVars(t *testing.T, ctx context.Context, tab *cdp.Page) map[string]map[string]string {
	t.Helper()
	js := `(() => { const out = {}; for (const n of document.querySelectorAll('#panel .node')) {
		const v = {}; for (const f of ['term','votedFor','commit','durable','loglen']) { const e = n.querySelector('.' + f); if (e) v[f] = e.textContent; }
		v.role = n.querySelector('.role').textContent; out[n.dataset.node] = v; } return out; })()`
	var out map[string]map[string]string
	if err := tab.Eval(ctx, js, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// wantVars is what the panel must show after event k: each node's last
// logged state at or before k.
func wantVars(p *Page, k int) map[string]map[string]string {
	out := map[string]map[string]string{}
	for n, name := range p.Names {
		v := map[string]string{"term": "1", "votedFor": "Nil", "commit": "0", "loglen": "0", "role": "Follower"}
		for j := 0; j <= k; j++ {
			e := p.Events[j]
			if e.Node != n+1 || e.State == nil {
				continue
			}
			s := e.State
			v["term"], v["commit"], v["loglen"] = fmt.Sprint(s.Term), fmt.Sprint(s.Commit), fmt.Sprint(s.Len)
			v["role"] = []string{"Follower", "Candidate", "Leader"}[s.Role]
			v["votedFor"] = "Nil"
			if s.VotedFor > 0 {
				v["votedFor"] = p.Names[s.VotedFor-1]
			}
			if s.Durable != nil {
				v["durable"] = fmt.Sprint(*s.Durable)
			}
		}
		if _, ok := v["durable"]; !ok && p.Config.Profile == "durable" {
			v["durable"] = "0"
		}
		out[name] = v
	}
	return out
}

func shoot(t *testing.T, ctx context.Context, tab *cdp.Page, name string) {
	if *screenshots == "" {
		return
	}
	png, err := tab.Screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(*screenshots, name+".png")
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if q, err := exec.LookPath("pngquant"); err == nil { // smaller pictures for docs/, where it is installed
		exec.Command(q, "--force", "--skip-if-larger", "--output", out, "--", out).Run()
	}
}

// simulatorFailure runs the replica runtime's simulator with a runtime bug
// switched on (no-chain-check: records are not verified, so a wire flip
// reaches a log) until a seed fails, and returns that run's trace.
func simulatorFailure(t *testing.T) (*Page, string) {
	for seed := uint64(1); seed <= 50; seed++ {
		o := sim.Default(seed)
		o.RuntimeBugs = replica.BugNoChainCheck
		s, err := sim.New(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		if len(s.Violations) == 0 {
			continue
		}
		var b bytes.Buffer
		w := trace.NewWriter(&b)
		for _, e := range s.Events {
			w.Write(e)
		}
		w.Flush()
		p, err := Build([]Source{{Name: fmt.Sprintf("sim seed %d, no-chain-check", seed), R: &b}}, Options{Check: true, Invariants: true})
		if err != nil {
			t.Fatal(err)
		}
		return p, s.Violations[0]
	}
	t.Fatal("no seed of 50 fails with no-chain-check")
	return nil, ""
}

func raftdPage(t *testing.T) *Page {
	paths := glob(t, "testdata/raftd-demo/*.ndjson")
	var sources []Source
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, Source{Name: p, R: bytes.NewReader(data)})
	}
	p, err := Build(sources, Options{Check: true, Invariants: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBrowserRunPages loads the pages of a counterexample, an impl/ trace
// with drops and duplicates, a simulator failure and a raftd cluster's
// per-node traces in Chromium: the diagram has a lane per node and an
// arrow per message handled, stepping with the keys and the buttons moves
// the selection, and the panel shows each node's logged state.
func TestBrowserRunPages(t *testing.T) {
	b, ctx := browser(t)
	simPage, why := simulatorFailure(t)
	t.Logf("simulator failure: %.120s", why)
	cases := []struct {
		name  string
		page  *Page
		steps int
	}{
		{"counterexample-self-counts-appended", buildFile(t, "../spec/testdata/counterexamples/self-counts-appended.ndjson", Options{Check: true, Invariants: true}), 5},
		{"impl-random-seed-001", buildFile(t, "../tla/traces/impl/random-seed-001.ndjson", Options{Check: true, Invariants: true}), 40},
		{"simulator-no-chain-check", simPage, 60},
		{"raftd-demo", raftdPage(t), 25},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.page
			tab := open(t, ctx, b, p, 1400, 900)
			in := info(t, ctx, tab)
			if in.Lanes != len(p.Names) || in.Rendered.Lanes != len(p.Names) {
				t.Fatalf("%d lanes (%d drawn), want %d", in.Lanes, in.Rendered.Lanes, len(p.Names))
			}
			if in.Events != len(p.Events) || in.Segments != segments(p) {
				t.Fatalf("the page has %d events and %d arrows, the data %d and %d", in.Events, in.Segments, len(p.Events), segments(p))
			}
			// The whole diagram, top to bottom: every arrow is drawn once
			// its rows are on screen.
			var drawn int
			if err := tab.Eval(ctx, `(async () => { const s = document.getElementById('scroll'); const seen = new Set();
				for (let top = 0; ; top += s.clientHeight / 2) { s.scrollTop = top; s.dispatchEvent(new Event('scroll'));
					await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
					for (const a of document.querySelectorAll('#svg path.arrow:not(.hit)')) seen.add(a.dataset.s);
					if (top >= s.scrollHeight) break; }
				s.scrollTop = 0; return seen.size; })()`, &drawn); err != nil {
				t.Fatal(err)
			}
			if drawn != segments(p) {
				t.Fatalf("%d arrows drawn while scrolling through, want %d", drawn, segments(p))
			}
			// Step with the keyboard, then with the buttons.
			if err := tab.Eval(ctx, "document.getElementById('scroll').focus()", nil); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < tc.steps; k++ {
				if err := tab.Key(ctx, "ArrowDown"); err != nil {
					t.Fatal(err)
				}
			}
			if in := info(t, ctx, tab); in.Cur != tc.steps-1 {
				t.Fatalf("after %d ArrowDown the selection is event index %d", tc.steps, in.Cur)
			}
			if got, want := nodeVars(t, ctx, tab), wantVars(p, tc.steps-1); !equalVars(got, want) {
				t.Fatalf("after event index %d the panel shows\n%v\nwant\n%v", tc.steps-1, got, want)
			}
			if err := tab.Eval(ctx, "document.getElementById('next').click(); document.getElementById('next').click(); document.getElementById('prev').click()", nil); err != nil {
				t.Fatal(err)
			}
			if in := info(t, ctx, tab); in.Cur != tc.steps {
				t.Fatalf("after next, next, prev the selection is %d, want %d", in.Cur, tc.steps)
			}
			if got, want := nodeVars(t, ctx, tab), wantVars(p, tc.steps); !equalVars(got, want) {
				t.Fatalf("after event index %d the panel shows\n%v\nwant\n%v", tc.steps, got, want)
			}
			if k := interesting(p); k >= 0 {
				tab.Eval(ctx, fmt.Sprintf("viz.go(%d)", k), nil)
			}
			shoot(t, ctx, tab, tc.name)
		})
	}
}

// interesting is the event a screenshot shows: the one the spec rejects,
// else the first violation, else -1.
func interesting(p *Page) int {
	if p.Check != nil && !p.Check.OK && p.Check.Event >= 0 {
		return p.Check.Event
	}
	if p.Inv != nil && len(p.Inv.First) > 0 {
		return p.Inv.First[0].Event
	}
	return -1
}

func equalVars(got, want map[string]map[string]string) bool {
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	return bytes.Equal(g, w)
}

// TestBrowserLargeTrace: a page of 10^5 events loads, draws only the rows
// on screen, and jumps to any event.
func TestBrowserLargeTrace(t *testing.T) {
	b, ctx := browser(t)
	data := steadyTrace(t, 100_000)
	p, err := Build([]Source{{Name: "steady run of 10^5 events", R: bytes.NewReader(data)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tab := open(t, ctx, b, p, 1280, 800)
	in := info(t, ctx, tab)
	if in.Events != len(p.Events) || in.Rendered.Rows > 100 || in.Rendered.Rows < 20 {
		t.Fatalf("%d events, %d rows drawn", in.Events, in.Rendered.Rows)
	}
	for _, k := range []int{len(p.Events) - 1, 17, 50_000} {
		var got struct {
			Title string
			Rows  int
			Label bool
		}
		js := fmt.Sprintf(`(async () => { viz.go(%d); await new Promise(r => requestAnimationFrame(r));
			const labels = [...document.querySelectorAll('#svg text.seqno')].map(e => e.textContent);
			return {title: document.querySelector('#panel .event b').textContent, rows: document.querySelectorAll('#svg rect.rowbg[data-r]').length,
				label: labels.includes('%d')}; })()`, k, p.Events[k].Seq)
		if err := tab.Eval(ctx, js, &got); err != nil {
			t.Fatal(err)
		}
		if got.Title != fmt.Sprintf("event %d", p.Events[k].Seq) || !got.Label || got.Rows > 100 {
			t.Fatalf("jump to %d: %+v", k, got)
		}
		if want := wantVars(p, k); !equalVars(nodeVars(t, ctx, tab), want) {
			t.Fatalf("jump to %d: the panel shows %v, want %v", k, nodeVars(t, ctx, tab), want)
		}
	}
	shoot(t, ctx, tab, "large-100k")
}

// TestBrowserNoErrors: the pages log no script error, stepping through a
// single trace and a merge of per-node files (whose first file's events
// carry no file index in the data: the panel once threw on them and kept
// showing the previous event's state).
func TestBrowserNoErrors(t *testing.T) {
	b, ctx := browser(t)
	pages := []struct {
		name, find string
		page       *Page
	}{
		{"scenario-truncated_voter", "Corrupt", buildFile(t, "../tla/traces/impl/scenario-truncated_voter.ndjson", Options{Check: true, Invariants: true})},
		{"raftd-demo", "Crash", raftdPage(t)},
	}
	for _, pc := range pages {
		t.Run(pc.name, func(t *testing.T) {
			p := pc.page
			tab := open(t, ctx, b, p, 1000, 700)
			var errs []string
			js := `(async () => { const errs = []; window.addEventListener('error', e => errs.push(String(e.message)));
				for (let k = -1; k < viz.data.events.length; k += 7) {
					try { viz.go(k); } catch (e) { errs.push('event ' + k + ': ' + e); }
					await new Promise(r => setTimeout(r, 0)); }
				document.getElementById('find').value = '` + pc.find + `'; document.getElementById('findNext').click();
				document.querySelector('#svg').dispatchEvent(new MouseEvent('mousemove', {clientX: 300, clientY: 300, bubbles: true}));
				return errs; })()`
			if err := tab.Eval(ctx, js, &errs); err != nil {
				t.Fatal(err)
			}
			if len(errs) > 0 {
				t.Fatalf("script errors: %v", errs)
			}
			var cur int
			tab.Eval(ctx, "viz.cur()", &cur)
			if a := p.Actions[p.Events[cur].Action]; !strings.Contains(a, pc.find) {
				t.Fatalf("find %q selected %s", pc.find, a)
			}
		})
	}
}

// waitJS evaluates cond (a JavaScript expression) until it is true.
func waitJS(t *testing.T, ctx context.Context, tab *cdp.Page, cond string) {
	t.Helper()
	js := `(async () => { for (let k = 0; k < 400; k++) { try { if (` + cond + `) return true; } catch (e) {} await new Promise(r => setTimeout(r, 25)); } return false; })()`
	var ok bool
	if err := tab.Eval(ctx, js, &ok); err != nil || !ok {
		t.Fatalf("waiting for %s: %v", cond, err)
	}
}

// TestBrowserExplorer walks bug-661's model in the explorer page: Init
// lists the enabled actions, a click takes one, back returns, explore
// jumps to the counterexample, whose invariants show the violation.
func TestBrowserExplorer(t *testing.T) {
	b, ctx := browser(t)
	_, srv := newTestExplorer(t, bug661, ExplorerOptions{})
	tab, err := b.NewPage(ctx, 1280, 800)
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Navigate(ctx, srv.URL+"/"); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, tab, "document.body.dataset.ready === '1'")
	var init StateView
	get(t, srv.URL+"/api/state?path=", &init)
	var n int
	tab.Eval(ctx, "document.querySelectorAll('#succ li[data-index]').length", &n)
	if n != len(init.Successors) {
		t.Fatalf("the page lists %d actions, the model has %d", n, len(init.Successors))
	}
	// Take Timeout(s1) by clicking it.
	if err := tab.Eval(ctx, `[...document.querySelectorAll('#succ li[data-index]')].find(li => li.textContent.startsWith('Timeout(s1)')).click()`, nil); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, tab, "explorer.path().length === 1")
	var term string
	tab.Eval(ctx, `document.querySelector('.server[data-server="s1"] .currentTerm').textContent`, &term)
	if term != "2" {
		t.Fatalf("after Timeout(s1) the page shows s1 in term %q", term)
	}
	if !strings.Contains(evalString(t, ctx, tab, "location.hash"), "path=") {
		t.Fatal("the URL does not name the state")
	}
	tab.Eval(ctx, "document.getElementById('back').click()", nil)
	waitJS(t, ctx, tab, "explorer.path().length === 0")
	// Jump to the counterexample.
	tab.Eval(ctx, "document.getElementById('inv').value = 'CommittedIsDurable'; document.getElementById('explore').click()", nil)
	waitJS(t, ctx, tab, "explorer.path().length > 0 && document.querySelector('.pill.bad[data-inv=\"CommittedIsDurable\"]') !== null")
	if s := evalString(t, ctx, tab, "document.getElementById('status').textContent"); !strings.Contains(s, "distinct=723") {
		t.Fatalf("status %q", s)
	}
	shoot(t, ctx, tab, "explorer-bug661")
}

func evalString(t *testing.T, ctx context.Context, tab *cdp.Page, js string) string {
	t.Helper()
	var s string
	if err := tab.Eval(ctx, js, &s); err != nil {
		t.Fatal(err)
	}
	return s
}
