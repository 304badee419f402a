package viz

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/durableraft/durableraft/spec"
	"github.com/durableraft/durableraft/trace"
)

// Explorer serves the state space of one model of spec/ to a browser:
// the page (GET /) and a JSON API. A state is named by its path from Init:
// the index of the successor taken at each step, in the fixed order in
// which Next emits them ("" is Init, "3.0.12" three steps in), so a URL
// names a state and going back is dropping the last index.
type Explorer struct {
	m   *spec.Model
	opt ExplorerOptions

	mu      sync.Mutex // one search at a time
	running bool
}

// ExplorerOptions tune an Explorer.
type ExplorerOptions struct {
	// MaxDistinct bounds a search started from the page (Explore's
	// MaxDistinct; default 2,000,000), Walks and Depth a simulation's
	// (default 10,000 walks of 100 steps).
	MaxDistinct int64
	Walks       int
	Depth       int
	Workers     int
	// Trace is a behaviour to offer on the page (a counterexample file),
	// as a path, and its name.
	Trace     []int
	TraceName string
}

// maxPath bounds a path: a state deeper than this is not asked for by the
// page, and replaying it costs a Next per step.
const maxPath = 10_000

// NewExplorer serves model m.
func NewExplorer(m *spec.Model, opt ExplorerOptions) *Explorer {
	if opt.MaxDistinct <= 0 {
		opt.MaxDistinct = 2_000_000
	}
	if opt.Walks <= 0 {
		opt.Walks = 10_000
	}
	if opt.Depth <= 0 {
		opt.Depth = 100
	}
	if opt.Workers <= 0 {
		opt.Workers = 1
	}
	return &Explorer{m: m, opt: opt}
}

var (
	//go:embed assets/explorer.html
	explorerHTML string
	//go:embed assets/explorer.js
	explorerJS string
	//go:embed assets/explorer.css
	explorerCSS string
)

// Handler is the explorer's HTTP interface:
//
//	GET  /                the page
//	GET  /api/model       the model: config, servers, invariants, bounds, the trace offered
//	GET  /api/state?path=P  the state at path P: every variable, the invariants, the successors
//	POST /api/check       {"mode": "explore"|"simulate", "invariant": NAME, "seed": N}:
//	                      search for a violation; its behaviour as a path
//
// Errors are JSON {"error": "..."} with status 400 (a bad path or
// request), 404, 405 or 409 (a search is running).
func (x *Explorer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", x.page)
	mux.HandleFunc("GET /api/model", x.model)
	mux.HandleFunc("GET /api/state", x.state)
	mux.HandleFunc("POST /api/check", x.check)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such path: "+r.URL.Path)
	})
	return mux
}

// LoopbackOnly wraps h so that it answers only requests whose Host is a
// loopback name or address, so that a web page elsewhere cannot reach a
// server bound to loopback through a DNS name of its own (DNS rebinding).
func LoopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		if ip := net.ParseIP(host); !(host == "localhost" || (ip != nil && ip.IsLoopback())) {
			writeError(w, http.StatusForbidden, "this explorer answers loopback hosts only (Host "+r.Host+")")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func (x *Explorer) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:")
	page := strings.NewReplacer("{{CSS}}", commonCSS+explorerCSS, "{{JS}}", explorerJS, "{{TITLE}}", htmlEscape("raftspec serve: "+x.m.Config.String())).Replace(explorerHTML)
	w.Write([]byte(page))
}

// ModelInfo is GET /api/model.
type ModelInfo struct {
	Config     string   `json:"config"`
	Profile    string   `json:"profile"`
	Servers    []string `json:"servers"`
	Invariants []string `json:"invariants"`
	Bugs       string   `json:"bugs,omitempty"`
	Trace      []int    `json:"trace,omitempty"`
	TraceName  string   `json:"traceName,omitempty"`
}

func (x *Explorer) model(w http.ResponseWriter, r *http.Request) {
	invs, _ := x.m.InvariantsFor("")
	info := ModelInfo{Config: x.m.Config.String(), Profile: x.m.Profile.String(), Bugs: x.m.Bugs.String(),
		Trace: x.opt.Trace, TraceName: x.opt.TraceName}
	for _, i := range x.m.Servers() {
		info.Servers = append(info.Servers, i.String())
	}
	for _, inv := range invs {
		info.Invariants = append(info.Invariants, inv.Name)
	}
	writeJSON(w, http.StatusOK, info)
}

// ParsePath parses a path: successor indexes separated by dots.
func ParsePath(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ".")
	if len(parts) > maxPath {
		return nil, fmt.Errorf("a path of %d steps (at most %d)", len(parts), maxPath)
	}
	out := make([]int, len(parts))
	for k, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 1<<20 {
			return nil, fmt.Errorf("step %d of the path: %q is not a successor index", k+1, p)
		}
		out[k] = n
	}
	return out, nil
}

// successor is one successor of a state, in Next's order.
type successor struct {
	label spec.Label
	state *spec.State
}

func (x *Explorer) successors(s *spec.State) []successor {
	var out []successor
	x.m.Next(s, func(n spec.State, l spec.Label) {
		kept := n
		out = append(out, successor{l, &kept})
	})
	return out
}

// walk replays a path from Init: the states and the steps along it.
func (x *Explorer) walk(path []int) ([]spec.Step, error) {
	s := x.m.Init()
	steps := []spec.Step{{State: s}}
	for k, idx := range path {
		succ := x.successors(s)
		if idx >= len(succ) {
			return nil, fmt.Errorf("step %d of the path: successor %d of %d", k+1, idx, len(succ))
		}
		s = succ[idx].state
		steps = append(steps, spec.Step{Label: succ[idx].label, State: s})
	}
	return steps, nil
}

func (x *Explorer) state(w http.ResponseWriter, r *http.Request) {
	path, err := ParsePath(r.URL.Query().Get("path"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	steps, err := x.walk(path)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, x.view(path, steps))
}

// CheckRequest is POST /api/check's body.
type CheckRequest struct {
	Mode      string `json:"mode"` // explore or simulate
	Invariant string `json:"invariant"`
	Seed      uint64 `json:"seed"`
}

// CheckResult is its answer: the contract line of raftspec explore or
// simulate, and the violation's behaviour as a path.
type CheckResult struct {
	Summary   string `json:"summary"`
	Violation bool   `json:"violation"`
	Invariant string `json:"invariant,omitempty"`
	Detail    string `json:"detail,omitempty"`
	Path      []int  `json:"path,omitempty"`
	Seconds   string `json:"seconds"`
}

func (x *Explorer) check(w http.ResponseWriter, r *http.Request) {
	var req CheckRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad request: "+err.Error())
		return
	}
	if req.Invariant != "" {
		if _, err := x.m.InvariantsFor(req.Invariant); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	x.mu.Lock()
	if x.running {
		x.mu.Unlock()
		writeError(w, http.StatusConflict, "a search is running")
		return
	}
	x.running = true
	x.mu.Unlock()
	defer func() { x.mu.Lock(); x.running = false; x.mu.Unlock() }()
	start := time.Now()
	var res CheckResult
	var v *spec.Violation
	switch req.Mode {
	case "explore", "":
		out, err := spec.Explore(x.m, spec.Options{Workers: x.opt.Workers, Invariant: req.Invariant, MaxDistinct: x.opt.MaxDistinct})
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		v, res.Summary = out.Violation, strings.TrimSuffix(out.Summary(""), " trace=")
	case "simulate":
		seed := req.Seed
		if seed == 0 {
			seed = 1
		}
		out, err := spec.Simulate(x.m, spec.SimOptions{Walks: x.opt.Walks, Depth: x.opt.Depth, Seed: seed, Invariant: req.Invariant, Workers: x.opt.Workers})
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		v, res.Summary = out.Violation, strings.TrimSuffix(out.Summary(""), " trace=")
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("mode %q: want explore or simulate", req.Mode))
		return
	}
	res.Seconds = fmt.Sprintf("%.1f", time.Since(start).Seconds())
	if v != nil {
		path, err := PathOf(x.m, v.Trace)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		res.Violation, res.Invariant, res.Detail, res.Path = true, v.Invariant, v.Detail, path
	}
	writeJSON(w, http.StatusOK, res)
}

// PathOf finds the path of a behaviour (its first step the initial state):
// at each step, the first successor with the step's label and state.
func PathOf(m *spec.Model, steps []spec.Step) ([]int, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	var path []int
	var a, b []byte
	s := m.Init()
	for k, st := range steps[1:] {
		found := -1
		idx := 0
		b = m.Encode(b[:0], st.State)
		m.Next(s, func(n spec.State, l spec.Label) {
			if found < 0 && l == st.Label {
				a = m.Encode(a[:0], &n)
				if string(a) == string(b) {
					found = idx
				}
			}
			idx++
		})
		if found < 0 {
			return nil, fmt.Errorf("viz: step %d (%v) of the behaviour is no successor", k+1, st.Label)
		}
		path = append(path, found)
		s = st.State
	}
	return path, nil
}

// TracePath finds the path of a trace file's run in model m: each event is
// the first successor whose step and logged fields agree with it. The
// trace's numbers must fit the explorer's model.
func TracePath(m *spec.Model, events []trace.Event) ([]int, error) {
	if len(events) == 0 || events[0].Config == nil {
		return nil, errors.New("viz: the trace does not start with Init")
	}
	r := newReplayer(events[0].Config)
	if r.m == nil {
		return nil, errors.New("viz: " + r.stop)
	}
	logs := map[string][]trace.Entry{}
	var path []int
	s := m.Init()
	for k := range events[1:] {
		e := &events[k+1]
		if e.State != nil {
			if e.State.LogKeep != nil {
				prev := logs[e.Node]
				keep := min(*e.State.LogKeep, len(prev))
				logs[e.Node] = trace.AppendRuns(append([]trace.Entry(nil), prev[:keep]...), e.State.LogAppend)
			} else {
				logs[e.Node] = e.State.Log
			}
		}
		l, msg, err := r.label(e)
		if err != nil {
			return nil, fmt.Errorf("viz: event %d: %w", k+1, err)
		}
		if msg != nil {
			l.Msg = *msg
		}
		found, idx := -1, 0
		var next *spec.State
		m.Next(s, func(n spec.State, got spec.Label) {
			defer func() { idx++ }()
			if found >= 0 || got.Action != l.Action || got.I != l.I {
				return
			}
			switch {
			case got.Action.ReceivesMessage() || got.Action == spec.ActSendAppendEntries || got.Action == spec.ActSendSnapshot:
				want := l.Msg
				want.Mlog = got.Msg.Mlog
				if want != got.Msg || got.Branch != l.Branch {
					return
				}
			case got.Action == spec.ActRequestVote || got.Action == spec.ActAppendEntries:
				if got.J != l.J {
					return
				}
			case got.Action == spec.ActClientRequest:
				if got.Value != l.Value {
					return
				}
			case got.Action == spec.ActCrash || got.Action == spec.ActCorrupt || got.Action == spec.ActFlushTo:
				if e.Cut != nil && got.Cut != l.Cut {
					return
				}
			}
			if r.stateMatches(&n, got.I, e, logs[e.Node]) {
				found = idx
				kept := n
				next = &kept
			}
		})
		if found < 0 {
			return nil, fmt.Errorf("viz: event %d (%s) is no successor in the model", k+1, e.Action)
		}
		path = append(path, found)
		s = next
	}
	return path, nil
}
