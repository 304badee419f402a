package spec

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// SimOptions tune Simulate.
type SimOptions struct {
	Walks     int    // number of random walks
	Depth     int    // steps per walk at most
	Seed      uint64 // walk k uses seed Seed+k, so each walk replays alone
	Invariant string // only this invariant, when set
	Workers   int
	// OnWalk, when set, receives every finished walk (for example to write
	// it as a trace). It may be called from several goroutines.
	OnWalk func(walk int, steps []Step)
}

// SimResult summarises a simulation.
type SimResult struct {
	Walks, Steps, Generated int64
	Violation               *Violation
	ViolationWalk           int
	// Reached reports, for each reachability property, whether some walk
	// reached it (the witness is that walk's prefix).
	Reached []Reachability
}

// Simulate takes seeded random walks from Init for behaviours too deep for
// breadth-first search. Every successor generated along a walk is checked
// against the invariants (in bounds or not, as in Explore); the walk moves
// to one in-bounds successor chosen uniformly at random, and ends at Depth
// or where no in-bounds successor exists.
func Simulate(m *Model, opt SimOptions) (*SimResult, error) {
	invs, err := m.InvariantsFor(opt.Invariant)
	if err != nil {
		return nil, err
	}
	if opt.Workers <= 0 {
		opt.Workers = 1
	}
	reach := newSometimesTracker(m)
	var (
		res      SimResult
		walkNext atomic.Int64
		mu       sync.Mutex
		wg       sync.WaitGroup
		stop     atomic.Bool
	)
	for w := 0; w < opt.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				k := int(walkNext.Add(1)) - 1
				if k >= opt.Walks {
					return
				}
				steps, generated, v := simulateWalk(m, invs, opt.Depth, opt.Seed+uint64(k))
				reach.walk(m, steps)
				mu.Lock()
				res.Walks++
				res.Steps += int64(len(steps) - 1)
				res.Generated += generated
				if v != nil && (res.Violation == nil || k < res.ViolationWalk) {
					res.Violation, res.ViolationWalk = v, k
					stop.Store(true)
				}
				mu.Unlock()
				if opt.OnWalk != nil {
					opt.OnWalk(k, steps)
				}
			}
		}()
	}
	wg.Wait()
	res.Reached = reach.results()
	return &res, nil
}

func simulateWalk(m *Model, invs []Invariant, depth int, seed uint64) ([]Step, int64, *Violation) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	weights := swarmWeights(rng, m)
	s := m.Init()
	steps := []Step{{State: s}}
	for _, inv := range invs {
		if d := inv.Check(m, s); d != "" {
			return steps, 1, &Violation{Invariant: inv.Name, Detail: d, Trace: steps}
		}
	}
	generated := int64(1)
	for len(steps) <= depth {
		var succ []Step
		var violation *Violation
		m.Next(s, func(n0 State, l Label) {
			generated++
			if violation != nil {
				return
			}
			n := &n0
			for _, inv := range invs {
				if d := inv.Check(m, n); d != "" {
					trace := append(append([]Step(nil), steps...), Step{Label: l, State: n})
					violation = &Violation{Invariant: inv.Name, Detail: d, Trace: trace}
					return
				}
			}
			if m.InBounds(n) {
				succ = append(succ, Step{Label: l, State: n})
			}
		})
		if violation != nil {
			return violation.Trace, generated, violation
		}
		if len(succ) == 0 {
			break
		}
		next := pickStep(rng, succ, &weights)
		steps = append(steps, next)
		s = next.State
	}
	return steps, generated, nil
}

// swarmWeights draws, once per walk, a weight for each action: 1, 4 or 16
// with equal chance. Walks that favour different actions reach different
// corners of the state space ("swarm testing"); no action is ever ruled out.
// Weights are drawn only for the actions the model has, so that adding
// actions to one profile does not change the walks of the others.
func swarmWeights(rng *rand.Rand, m *Model) [actionEnd]int {
	var w [actionEnd]int
	n := int(ActCorrupt) + 1
	if m.Production {
		n = int(actionEnd)
	}
	for a := range n {
		w[a] = 1 << (2 * rng.IntN(3))
	}
	return w
}

// pickStep chooses the next step as TLC's simulation mode does, first an
// action among the enabled ones, then one of its successors, except that the
// action is drawn with the walk's weights. Choosing among successors
// directly would let the message actions, which have one instance per
// message in the bag, crowd out the rest.
func pickStep(rng *rand.Rand, succ []Step, weights *[actionEnd]int) Step {
	var counts [actionEnd]int
	total := 0
	for _, st := range succ {
		if counts[st.Label.Action] == 0 {
			total += weights[st.Label.Action]
		}
		counts[st.Label.Action]++
	}
	pick := rng.IntN(total)
	for a := range counts {
		if counts[a] == 0 {
			continue
		}
		if pick >= weights[a] {
			pick -= weights[a]
			continue
		}
		k := rng.IntN(counts[a])
		for _, st := range succ {
			if st.Label.Action == Action(a) {
				if k == 0 {
					return st
				}
				k--
			}
		}
	}
	panic("unreachable")
}

// Summary is the last line simulate prints.
func (r *SimResult) Summary(tracePath string) string {
	line := fmt.Sprintf("walks=%d steps=%d generated=%d", r.Walks, r.Steps, r.Generated)
	if r.Violation != nil {
		return line + fmt.Sprintf(" result=violation invariant=%s walk=%d trace=%s", r.Violation.Invariant, r.ViolationWalk, tracePath)
	}
	return line + " result=ok"
}
