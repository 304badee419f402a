package spec

import (
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune an exploration.
type Options struct {
	// Workers expanding states in parallel; 0 means 1.
	Workers int
	// Invariant, when set, is the only invariant checked, so that verdicts
	// compare one to one with TLC's (search order decides which invariant
	// breaks first when several are checked).
	Invariant string
	// Progress, when set, receives TLC-style progress lines every
	// ProgressEvery (default one minute, as TLC).
	Progress      io.Writer
	ProgressEvery time.Duration
	// MaxDistinct stops the search (result incomplete) past this many
	// distinct states; 0 means no limit.
	MaxDistinct int64
	// Symmetry counts one state per class of states equal up to a renaming
	// of the servers, as TLC's SYMMETRY Permutations(Server), and with
	// SymmetryValues also of the values (the group TLC's Permutations(Server)
	// and Permutations(Value) compose to): symmetry.go.
	Symmetry, SymmetryValues bool
	// Merge identifies states that differ only in variables nothing reads
	// before overwriting them, and in write-only history (symmetry.go). The
	// counts are no longer TLC's; every violation is still a real one.
	Merge bool
	// Without searches the sub-model that takes no step of these actions
	// (reach.go): its violations are real, its counts are not TLC's.
	Without ActionSet
	// DepthFirst searches depth first, with one worker (reach.go): it
	// reaches deep states long before breadth first search would, at the
	// price of long counterexamples. The set of states is the same; Depth
	// is the longest path the search took.
	DepthFirst bool
}

// Step is one step of a behaviour: the action that led to State (the zero
// Label for the initial state).
type Step struct {
	Label Label
	State *State
}

// Violation is an invariant that a generated state breaks, and the
// behaviour that reaches it.
type Violation struct {
	Invariant string
	Detail    string
	Trace     []Step
}

// Result is the outcome of an exploration.
type Result struct {
	Distinct, Generated int64
	Depth               int
	Complete            bool // every reachable in-bounds state was expanded
	Violation           *Violation
	Reached             []Reachability
	Elapsed             time.Duration
}

// Summary is the contract line other tools parse.
func (r *Result) Summary(tracePath string) string {
	line := fmt.Sprintf("distinct=%d generated=%d depth=%d", r.Distinct, r.Generated, r.Depth)
	switch {
	case r.Violation != nil:
		return line + fmt.Sprintf(" result=violation invariant=%s trace=%s", r.Violation.Invariant, tracePath)
	case !r.Complete:
		return line + " result=incomplete"
	}
	return line + " result=ok"
}

type explorer struct {
	m         *Model
	opt       Options
	invs      []Invariant
	visited   fpSet
	sometimes *sometimesTracker

	generated, distinct atomic.Int64
	queued              atomic.Int64

	stop      atomic.Bool
	mu        sync.Mutex
	violation *pendingViolation
}

// worker is one expanding goroutine's scratch space.
type worker struct {
	scratch *State
	canon   *canonicalizer
	buf     []byte
}

func (x *explorer) newWorker() *worker {
	return &worker{scratch: new(State), canon: newCanonicalizer(x.m, x.opt.Symmetry, x.opt.SymmetryValues, x.opt.Merge)}
}

// fingerprintOf is the fingerprint under which s is (or would be) stored.
func (x *explorer) fingerprintOf(w *worker, s *State) uint64 {
	w.buf = w.canon.encode(w.buf[:0], s)
	return Fingerprint(w.buf)
}

type pendingViolation struct {
	inv, detail string
	parentFP    uint64
	label       Label
	state       *State
}

// Explore enumerates the states reachable from Init breadth first, checking
// the invariants on every generated state, under the model's bounds with
// TLC's CONSTRAINT semantics: a successor outside the bounds is generated
// and checked but neither counted as distinct nor explored further.
func Explore(m *Model, opt Options) (*Result, error) {
	invs, err := m.InvariantsFor(opt.Invariant)
	if err != nil {
		return nil, err
	}
	if opt.Workers <= 0 {
		opt.Workers = 1
	}
	if opt.Symmetry && m.Membership && m.InitConfig().Voters.Len() != len(m.servers) {
		return nil, fmt.Errorf("spec: -init-voters %d makes the servers asymmetric: no -symmetry", m.InitVoters)
	}
	if opt.Symmetry && m.Repair {
		return nil, fmt.Errorf("spec: -repair has no symmetry reduction yet")
	}
	if opt.Symmetry && m.Wipes > 0 {
		return nil, fmt.Errorf("spec: -wipes has no -symmetry yet (wipe.go's sets are not renamed)")
	}
	if opt.Symmetry && opt.Without.NamesServers() {
		return nil, fmt.Errorf("spec: a sub-model that names servers (%v) has no symmetry between them", opt.Without)
	}
	if opt.ProgressEvery <= 0 {
		opt.ProgressEvery = time.Minute
	}
	x := &explorer{m: m, opt: opt, invs: invs, sometimes: newSometimesTracker(m)}
	start := time.Now()

	init := m.Init()
	enc := x.newWorker().canon.encode(nil, init)
	x.generated.Add(1)
	x.check(init, 0, Label{})
	level := &levelQueue{}
	if m.InBounds(init) && x.visited.insert(Fingerprint(enc), 0) {
		x.distinct.Add(1)
		x.sometimes.state(m, init, 0, Label{}, Fingerprint(enc))
		w := blockWriter{q: level}
		w.add(enc)
		w.flush()
	}
	depth := 0
	if level.states > 0 {
		depth = 1
	}
	done := make(chan struct{})
	if opt.Progress != nil {
		go x.progress(start, done)
	}
	complete := true
	if opt.DepthFirst {
		depth, complete = x.depthFirst(level)
		level = &levelQueue{}
	}
	for level.states > 0 && !x.stop.Load() {
		x.queued.Store(level.states)
		next := x.expandLevel(level)
		if x.stop.Load() {
			break
		}
		if opt.MaxDistinct > 0 && x.distinct.Load() > opt.MaxDistinct && next.states > 0 {
			complete = false
			break
		}
		if next.states > 0 {
			depth++
		}
		level = next
	}
	close(done)
	res := &Result{
		Distinct:  x.distinct.Load(),
		Generated: x.generated.Load(),
		Depth:     depth,
		Complete:  complete && x.violation == nil,
		Elapsed:   time.Since(start),
		Reached:   x.sometimes.results(),
	}
	if v := x.violation; v != nil {
		var err error
		if res.Violation, err = x.violationTrace(v); err != nil {
			return nil, err
		}
	}
	for k := range res.Reached {
		if r := &res.Reached[k]; r.Found {
			r.witnessTrace = x.witness(r, x.sometimes.props[k])
		}
	}
	return res, nil
}

// violationTrace rebuilds the behaviour that breaks v's invariant. With
// symmetry or merging the replayed states are not the explored
// representatives but real states of their classes, so the invariant is
// checked again on the replayed last state and its detail is that state's.
func (x *explorer) violationTrace(v *pendingViolation) (*Violation, error) {
	if v.parentFP == 0 && v.label.Action == 0 {
		return &Violation{Invariant: v.inv, Detail: v.detail, Trace: []Step{{State: v.state}}}, nil
	}
	var inv Invariant
	for _, i := range x.invs {
		if i.Name == v.inv {
			inv = i
		}
	}
	trace, err := x.pathTo(v.parentFP)
	if err != nil {
		return nil, err
	}
	detail := ""
	trace, err = x.lastStep(trace, v.state, func(_ *State, _ Label, n *State) bool {
		detail = inv.Check(x.m, n)
		return detail != ""
	})
	if err != nil {
		return nil, err
	}
	return &Violation{Invariant: v.inv, Detail: detail, Trace: trace}, nil
}

// lastStep extends trace by a step into the class of target that ok
// accepts.
func (x *explorer) lastStep(trace []Step, target *State, ok func(pre *State, l Label, n *State) bool) ([]Step, error) {
	w := x.newWorker()
	want := x.fingerprintOf(w, target)
	if len(trace) == 0 {
		trace = []Step{{State: x.m.Init()}}
	}
	cur := trace[len(trace)-1].State
	var found *Step
	x.m.Next(cur, func(n State, l Label) {
		if found == nil && x.fingerprintOf(w, &n) == want && ok(cur, l, &n) {
			found = &Step{Label: l, State: &n}
		}
	})
	if found == nil {
		return nil, fmt.Errorf("spec: cannot replay the last step of the behaviour (%d steps)", len(trace))
	}
	return append(trace, *found), nil
}

// expandLevel expands every state of one BFS level with the workers and
// returns the next level.
func (x *explorer) expandLevel(level *levelQueue) *levelQueue {
	next := &levelQueue{}
	var cursor atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < x.opt.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := blockWriter{q: next}
			w := x.newWorker()
			for !x.stop.Load() {
				k := int(cursor.Add(1)) - 1
				if k >= len(level.blocks) {
					break
				}
				eachRecord(level.blocks[k], func(enc []byte) {
					if !x.stop.Load() {
						x.expand(string(enc), &out, w)
						x.queued.Add(-1)
					}
				})
				level.blocks[k] = nil // let the block go
			}
			out.flush()
		}()
	}
	wg.Wait()
	return next
}

// expand generates the successors of one state. w.scratch holds each
// successor while it is checked, so that successors are not allocated.
func (x *explorer) expand(enc string, out *blockWriter, w *worker) {
	m := x.m
	s, err := m.Decode(enc)
	assert(err == nil, "decoding a queued state: %v", err)
	parentFP := Fingerprint([]byte(enc))
	var generated, distinct int64
	m.Next(s, func(succ State, l Label) {
		if x.opt.Without.Has(&l) {
			return
		}
		generated++
		*w.scratch = succ
		n := w.scratch
		isNew := true
		inBounds := m.InBounds(n)
		var fp uint64
		if inBounds {
			fp = x.fingerprintOf(w, n)
			isNew = x.visited.insert(fp, parentFP)
		}
		if inBounds {
			x.sometimes.step(m, s, l, n, parentFP)
		}
		if !isNew {
			return
		}
		x.check(n, parentFP, l)
		if inBounds {
			distinct++
			x.sometimes.state(m, n, parentFP, l, fp)
			out.add(w.buf)
		}
	})
	x.generated.Add(generated)
	x.distinct.Add(distinct)
}

// check evaluates the invariants on a generated state.
func (x *explorer) check(s *State, parentFP uint64, l Label) {
	for _, inv := range x.invs {
		if detail := inv.Check(x.m, s); detail != "" {
			x.mu.Lock()
			if x.violation == nil {
				kept := *s
				x.violation = &pendingViolation{inv: inv.Name, detail: detail, parentFP: parentFP, label: l, state: &kept}
			}
			x.mu.Unlock()
			x.stop.Store(true)
			return
		}
	}
}

// pathTo rebuilds the behaviour from Init to the state with fingerprint fp
// by walking the recorded parents back, then replaying Next forward to
// recover each step's label and state. Each step goes to a successor of the
// replayed state in the class of the recorded one (with symmetry or
// merging, not necessarily the representative explored): the trace is a
// behaviour of the spec, never a sequence of representatives.
func (x *explorer) pathTo(fp uint64) ([]Step, error) {
	init := x.m.Init()
	if fp == 0 { // the violating state is initial
		return nil, nil
	}
	var fps []uint64
	for f := fp; f != 0; {
		fps = append(fps, f)
		p, ok := x.visited.parent(f)
		if !ok {
			return nil, fmt.Errorf("spec: fingerprint %x has no recorded parent", f)
		}
		f = p
	}
	trace := []Step{{State: init}}
	cur := init
	w := x.newWorker()
	for k := len(fps) - 2; k >= 0; k-- {
		target := fps[k]
		var found *Step
		x.m.Next(cur, func(n State, l Label) {
			// Merged states are in bounds as first reached: a replayed
			// member of the class may lie outside (docs/explorer.md).
			if found != nil || (!x.opt.Merge && !x.m.InBounds(&n)) {
				return
			}
			if x.fingerprintOf(w, &n) == target {
				found = &Step{Label: l, State: &n}
			}
		})
		if found == nil {
			return nil, fmt.Errorf("spec: cannot replay step %d of the counterexample", len(trace))
		}
		trace = append(trace, *found)
		cur = found.State
	}
	return trace, nil
}

func (x *explorer) progress(start time.Time, done <-chan struct{}) {
	t := time.NewTicker(x.opt.ProgressEvery)
	defer t.Stop()
	n := 0
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			n++
			mins := now.Sub(start).Minutes()
			g, d := x.generated.Load(), x.distinct.Load()
			fmt.Fprintf(x.opt.Progress,
				"Progress(%d) at %s: %d states generated (%.0f s/min), %d distinct states found (%.0f ds/min), %d states left on queue.\n",
				n, now.Format("2006-01-02 15:04:05"), g, float64(g)/mins, d, float64(d)/mins, x.queued.Load())
		}
	}
}

// DefaultWorkers is the number of CPUs.
func DefaultWorkers() int { return runtime.NumCPU() }
