package spec

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// The liveness check (issue 10 items 2 and 5): "once the faults stop, a
// leader is elected and commits", as a bounded possibility over fault-free
// continuations.
//
// Let R be the states the model reaches within its bounds, faults and all
// (what Explore enumerates). A continuation is a behaviour from a state of
// R that takes no fault: no Crash, Corrupt, CrashFromSnapshot,
// CorruptFromSnapshot, Restart, DuplicateMessage or CorruptLeaderCommit
// (messages may still be lost: DropMessage is the network's, and timeouts,
// step-downs and client requests are the cluster's own). It stays within
// the continuation bounds: the model's, with the term, the log and the bag
// allowed to grow by LivenessOptions' extras, so that a state at the
// model's term bound can still hold an election. The goal is LeaderCommits:
// some leader has committed an entry of its own term (it was elected, its
// term's entry is durable on a quorum, clients can be served). Every member
// is up in every state (a crash is a reboot), so "a quorum is back" always
// holds once the faults stop.
//
// The check: from every state of R some continuation reaches the goal
// (AG EF LeaderCommits over the fault-free graph). In a finite graph that is
// what makes "eventually" hold under strong fairness of every fault-free
// step (a behaviour that infinitely often can take each step towards the
// goal takes it), so it is the bounded "eventually" over fair
// continuations; the bounds make it a check of continuations within them
// only: a state whose goal lies beyond the extras is reported stuck, and
// the report's continuation count says how far the search looked.
//
// It is a backward fixpoint: every state of R and of the continuations is
// stored with its fault-free edges reversed, then the goal's predecessors
// are marked back from the goal states; a state of R left unmarked is
// stuck, and the shortest path from Init to one is the counterexample.

// LivenessOptions tune CheckLiveness.
type LivenessOptions struct {
	// ExtraTerm, ExtraLog and ExtraMsgs widen the continuation's bounds
	// beyond the model's MaxTerm, MaxLog and MaxMsgs.
	ExtraTerm, ExtraLog, ExtraMsgs int
	// MaxStates stops the check (incomplete) past this many stored states;
	// 0 means no limit.
	MaxStates int
	// Progress, when set, receives a line every ProgressEvery (default one
	// minute).
	Progress      io.Writer
	ProgressEvery time.Duration
}

// LivenessResult is the outcome of CheckLiveness.
type LivenessResult struct {
	Reached  int   // states of R: reachable within the model's bounds
	States   int   // R and the continuations' states, within their bounds
	Edges    int64 // fault-free steps stored
	Goal     int   // states where LeaderCommits holds
	Stuck    int   // states of R from which no continuation reaches the goal
	Complete bool
	// Trace is the shortest behaviour found from Init to a stuck state,
	// and StuckFuture how many states its continuations reach (none of
	// them a goal).
	Trace       []Step
	StuckFuture int
	Elapsed     time.Duration
}

// Summary is the contract line of raftspec liveness.
func (r *LivenessResult) Summary(tracePath string) string {
	s := fmt.Sprintf("reached=%d states=%d edges=%d goal=%d", r.Reached, r.States, r.Edges, r.Goal)
	switch {
	case r.Stuck > 0:
		return s + fmt.Sprintf(" result=stuck stuck=%d future=%d trace=%s", r.Stuck, r.StuckFuture, tracePath)
	case !r.Complete:
		return s + " result=incomplete"
	}
	return s + " result=ok"
}

// FaultAction reports whether a is a fault the liveness check's
// continuations do not take.
func FaultAction(a Action) bool {
	switch a {
	case ActCrash, ActCorrupt, ActCrashFromSnapshot, ActCorruptFromSnapshot, ActRestart,
		ActDuplicateMessage, ActCorruptLeaderCommit, ActPowerLoss, ActPowerLossFromSnapshot:
		return true
	}
	return false
}

// LeaderCommits is the liveness check's goal: some leader has committed an
// entry of its own term.
//
//	LeaderCommits == \E i \in Server : /\ state[i] = Leader
//	                                   /\ commitIndex[i] >= 1
//	                                   /\ log[i][commitIndex[i]].term = currentTerm[i]
func (m *Model) LeaderCommits(s *State) bool {
	for _, i := range m.servers {
		c := int(s.CommitIndex[i])
		if s.State[i] == Leader && c >= 1 && c <= s.Log[i].Len() && s.Log[i].Term(c) == s.CurrentTerm[i] {
			return true
		}
	}
	return false
}

// inLiveBounds is InBounds with the continuation's extras.
func (m *Model) inLiveBounds(s *State, opt *LivenessOptions) bool {
	wide := *m
	wide.MaxTerm += opt.ExtraTerm
	wide.MaxLog += opt.ExtraLog
	wide.MaxMsgs += opt.ExtraMsgs
	return wide.InBounds(s)
}

type liveGraph struct {
	m         *Model
	canon     *canonicalizer
	scratch   State
	opt       *LivenessOptions
	index     map[uint64]int32
	enc       []string
	inR       []bool
	expandedR []bool
	expanded  []bool
	parent    []int32 // in R: the state of R it was first reached from (-1 for Init)
	depth     []int32
	edgeFrom  []int32 // fault-free edge k: edgeFrom[k] -> edgeTo[k]
	edgeTo    []int32
	queue     []int32
}

// encode is a state's identity for the check: the history variables
// (which no action reads) erased and the dead variables merged (-merge,
// symmetry.go), so states with the same futures are stored once.
func (g *liveGraph) encode(b []byte, s *State) []byte {
	g.canon.mergeInto(&g.scratch, s)
	g.scratch.Elections, g.scratch.AllLogs, g.scratch.Committed = nil, nil, nil
	return g.m.Encode(b, &g.scratch)
}

func (g *liveGraph) add(enc []byte) (int32, bool) {
	fp := Fingerprint(enc)
	if id, ok := g.index[fp]; ok {
		return id, false
	}
	id := int32(len(g.enc))
	g.index[fp] = id
	g.enc = append(g.enc, string(enc))
	g.inR = append(g.inR, false)
	g.expandedR = append(g.expandedR, false)
	g.expanded = append(g.expanded, false)
	g.parent = append(g.parent, -1)
	g.depth = append(g.depth, -1)
	return id, true
}

func (g *liveGraph) markR(id, parent int32) {
	if g.inR[id] {
		return
	}
	g.inR[id] = true
	g.parent[id] = parent
	if parent >= 0 {
		g.depth[id] = g.depth[parent] + 1
	} else {
		g.depth[id] = 0
	}
	if g.expanded[id] {
		g.queue = append(g.queue, id) // expand again, with the faults
	}
}

// CheckLiveness runs the liveness check (above) on m.
func CheckLiveness(m *Model, opt LivenessOptions) (*LivenessResult, error) {
	start := time.Now()
	g := &liveGraph{m: m, opt: &opt, index: map[uint64]int32{}, canon: newCanonicalizer(m, false, false, true)}
	var buf []byte
	init := m.Init()
	buf = g.encode(buf[:0], init)
	id, _ := g.add(buf)
	g.queue = append(g.queue, id)
	g.markR(id, -1)
	res := &LivenessResult{Complete: true}
	every := opt.ProgressEvery
	if every <= 0 {
		every = time.Minute
	}
	last := start
	for head := 0; head < len(g.queue); head++ {
		u := g.queue[head]
		if g.expanded[u] && (!g.inR[u] || g.expandedR[u]) {
			continue
		}
		if opt.MaxStates > 0 && len(g.enc) > opt.MaxStates {
			res.Complete = false
			break
		}
		s, err := m.Decode(g.enc[u])
		if err != nil {
			return nil, err
		}
		first := !g.expanded[u]
		g.expanded[u] = true
		full := g.inR[u]
		g.expandedR[u] = full
		m.Next(s, func(n State, l Label) {
			fault := FaultAction(l.Action)
			inB := full && m.InBounds(&n)
			if !inB && (fault || !m.inLiveBounds(&n, &opt)) {
				return
			}
			buf = g.encode(buf[:0], &n)
			v, fresh := g.add(buf)
			if fresh {
				g.queue = append(g.queue, v)
			}
			if inB {
				g.markR(v, u)
			}
			if !fault && first {
				g.edgeFrom = append(g.edgeFrom, u)
				g.edgeTo = append(g.edgeTo, v)
			}
		})
		if opt.Progress != nil && time.Since(last) >= every {
			last = time.Now()
			fmt.Fprintf(opt.Progress, "liveness: %d states, %d fault-free edges, %d left on queue (%v)\n",
				len(g.enc), len(g.edgeFrom), len(g.queue)-head-1, time.Since(start).Round(time.Second))
		}
	}
	good, err := g.backward(res)
	if err != nil {
		return nil, err
	}
	res.States, res.Edges = len(g.enc), int64(len(g.edgeFrom))
	stuck := int32(-1)
	for id := range g.enc {
		if !g.inR[id] {
			continue
		}
		res.Reached++
		if res.Complete && !good[id] {
			res.Stuck++
			if stuck < 0 || g.depth[id] < g.depth[stuck] {
				stuck = int32(id)
			}
		}
	}
	if stuck >= 0 {
		if res.Trace, err = g.pathTo(stuck); err != nil {
			return nil, err
		}
		res.StuckFuture = g.future(stuck)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// backward marks the states from which the goal is reachable over the
// stored fault-free edges.
func (g *liveGraph) backward(res *LivenessResult) ([]bool, error) {
	n := len(g.enc)
	// Reverse adjacency in compressed rows: into[v] lists the u with u -> v.
	start := make([]int32, n+1)
	for _, v := range g.edgeTo {
		start[v+1]++
	}
	for k := 1; k <= n; k++ {
		start[k] += start[k-1]
	}
	into := make([]int32, len(g.edgeTo))
	fill := slices.Clone(start[:n])
	for k, v := range g.edgeTo {
		into[fill[v]] = g.edgeFrom[k]
		fill[v]++
	}
	good := make([]bool, n)
	var work []int32
	for id := range g.enc {
		s, err := g.m.Decode(g.enc[id])
		if err != nil {
			return nil, err
		}
		if g.m.LeaderCommits(s) {
			good[id] = true
			res.Goal++
			work = append(work, int32(id))
		}
	}
	for len(work) > 0 {
		v := work[len(work)-1]
		work = work[:len(work)-1]
		for _, u := range into[start[v]:start[v+1]] {
			if !good[u] {
				good[u] = true
				work = append(work, u)
			}
		}
	}
	return good, nil
}

// future counts the states the fault-free edges reach from id.
func (g *liveGraph) future(id int32) int {
	out := map[int32][]int32{}
	for k, u := range g.edgeFrom {
		out[u] = append(out[u], g.edgeTo[k])
	}
	seen := map[int32]bool{id: true}
	work := []int32{id}
	for len(work) > 0 {
		u := work[len(work)-1]
		work = work[:len(work)-1]
		for _, v := range out[u] {
			if !seen[v] {
				seen[v] = true
				work = append(work, v)
			}
		}
	}
	return len(seen)
}

// pathTo replays the behaviour from Init to the state id of R through the
// recorded parents.
func (g *liveGraph) pathTo(id int32) ([]Step, error) {
	var ids []int32
	for v := id; v >= 0; v = g.parent[v] {
		ids = append(ids, v)
	}
	cur := g.m.Init()
	trace := []Step{{State: cur}}
	var buf []byte
	for k := len(ids) - 2; k >= 0; k-- {
		want := g.enc[ids[k]]
		var found *Step
		g.m.Next(cur, func(n State, l Label) {
			if found != nil || !g.m.InBounds(&n) {
				return
			}
			buf = g.encode(buf[:0], &n)
			if string(buf) == want {
				found = &Step{Label: l, State: &n}
			}
		})
		if found == nil {
			return nil, fmt.Errorf("spec: liveness: cannot replay step %d of the path", len(trace))
		}
		trace = append(trace, *found)
		cur = found.State
	}
	return trace, nil
}

// LiveFrom searches the fault-free continuations of s, within the
// continuation bounds, for a state where LeaderCommits holds. It reports
// whether one is reached and how many states it looked at (all of them, when
// none is reached).
func LiveFrom(m *Model, s *State, opt LivenessOptions) (bool, int) {
	g := &liveGraph{m: m, opt: &opt, canon: newCanonicalizer(m, false, false, true)}
	seen := map[uint64]bool{}
	var buf []byte
	key := func(n *State) uint64 {
		buf = g.encode(buf[:0], n)
		return Fingerprint(buf)
	}
	seen[key(s)] = true
	queue := []*State{s}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if m.LeaderCommits(cur) {
			return true, len(seen)
		}
		m.Next(cur, func(n State, l Label) {
			if FaultAction(l.Action) || !m.inLiveBounds(&n, &opt) {
				return
			}
			if k := key(&n); !seen[k] {
				seen[k] = true
				queue = append(queue, &n)
			}
		})
	}
	return false, len(seen)
}
