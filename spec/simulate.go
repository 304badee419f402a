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
	// Without: the walks take no step of these actions (reach.go).
	Without ActionSet
	// SwarmServers draws each walk's weights per action and server (the
	// label's i) from 1, 4, 16 and 64 instead of per action from 1, 4 and
	// 16: some walks let one server time out often and another never, or
	// one leader replicate and another not, which the interleavings of the
	// classic bugs need (reach.go). Off, the walks are those of earlier
	// releases for the same seed.
	SwarmServers bool
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
				steps, generated, v := simulateWalk(m, invs, &opt, opt.Seed+uint64(k))
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

func simulateWalk(m *Model, invs []Invariant, opt *SimOptions, seed uint64) ([]Step, int64, *Violation) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	var weights swarm
	if opt.SwarmServers {
		weights = serverSwarmWeights(rng, m)
	} else {
		weights = swarmWeights(rng, m)
	}
	depth, without := opt.Depth, opt.Without
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
			if without.Has(&l) {
				return
			}
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

// swarm is a walk's weight for each action and server: w[a][i] for the
// steps of action a whose label names server i (w[a][0] for all of them
// when the weights are per action).
type swarm [actionEnd][MaxServers + 1]int

// key is the group a step is drawn in, and its weight.
func (w *swarm) key(l *Label) (a Action, i ServerID, weight int) {
	if w[l.Action][0] != 0 {
		return l.Action, 0, w[l.Action][0]
	}
	return l.Action, l.I, w[l.Action][l.I]
}

// modelActions lists the actions the model has: weights are drawn only
// for those, in this order, so that adding actions to one profile does not
// change the walks of the others (membership's ChangeConfig is drawn last,
// and only with membership; then PowerLoss, only with power losses; then
// the repair's, only with -repair).
func modelActions(m *Model) []Action {
	n := ActCorrupt + 1
	if m.Production {
		n = ActCorruptFromSnapshot + 1
	}
	var out []Action
	for a := Action(0); a < n; a++ {
		out = append(out, a)
	}
	if m.Membership {
		out = append(out, ActChangeConfig)
	}
	if m.PowerLosses > 0 {
		out = append(out, ActPowerLoss) // last, and only with power losses
	}
	if m.Repair {
		out = append(out, ActRequestRepair, ActHandleRepairRequest, ActHandleRepairResponse) // repair.go, only with -repair
	}
	if m.Wipes > 0 {
		out = append(out, ActWipe, ActAnswerFirstBoot, ActConfirmFirstBoot)
	}
	return out
}

// swarmWeights draws, once per walk, a weight for each action: 1, 4 or 16
// with equal chance. Walks that favour different actions reach different
// corners of the state space ("swarm testing"); no action is ever ruled out.
func swarmWeights(rng *rand.Rand, m *Model) swarm {
	var w swarm
	for _, a := range modelActions(m) {
		w[a][0] = 1 << (2 * rng.IntN(3))
	}
	return w
}

// serverSwarmWeights draws a weight for each action and server: 1, 4, 16
// or 64 with equal chance (SimOptions.SwarmServers).
func serverSwarmWeights(rng *rand.Rand, m *Model) swarm {
	var w swarm
	for _, a := range modelActions(m) {
		for _, i := range m.servers {
			w[a][i] = 1 << (2 * rng.IntN(4))
		}
	}
	return w
}

// pickStep chooses the next step as TLC's simulation mode does, first an
// action among the enabled ones, then one of its successors, except that the
// action (with SwarmServers, the action and server) is drawn with the
// walk's weights. Choosing among successors
// directly would let the message actions, which have one instance per
// message in the bag, crowd out the rest.
func pickStep(rng *rand.Rand, succ []Step, weights *swarm) Step {
	var counts [actionEnd][MaxServers + 1]int
	total := 0
	for k := range succ {
		a, i, w := weights.key(&succ[k].Label)
		if counts[a][i] == 0 {
			total += w
		}
		counts[a][i]++
	}
	pick := rng.IntN(total)
	for a := range counts {
		for i := range counts[a] {
			if counts[a][i] == 0 {
				continue
			}
			w := weights[a][i]
			if pick >= w {
				pick -= w
				continue
			}
			k := rng.IntN(counts[a][i])
			for n := range succ {
				if ka, ki, _ := weights.key(&succ[n].Label); ka == Action(a) && ki == ServerID(i) {
					if k == 0 {
						return succ[n]
					}
					k--
				}
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
