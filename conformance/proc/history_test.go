package proc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/durableraft/durableraft/impl/client"
)

// The history: operations on a few register keys, checked by porcupine
// key by key.
type regInput struct {
	key   string
	put   bool
	value string
}

type regOutput struct {
	value   string
	found   bool
	unknown bool // a put whose outcome is unknown: it never returns
}

var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(regInput).key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, len(keys))
		for i, k := range keys {
			out[i] = by[k]
		}
		return out
	},
	Init: func() interface{} { return regOutput{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		st, in, out := state.(regOutput), input.(regInput), output.(regOutput)
		if in.put {
			return true, regOutput{value: in.value, found: true}
		}
		return out.found == st.found && out.value == st.value, st
	},
	Equal: func(a, b interface{}) bool { return a.(regOutput) == b.(regOutput) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(regInput), output.(regOutput)
		switch {
		case in.put && out.unknown:
			return fmt.Sprintf("put(%s, %s) -> unknown", in.key, in.value)
		case in.put:
			return fmt.Sprintf("put(%s, %s)", in.key, in.value)
		case !out.found:
			return fmt.Sprintf("get(%s) -> absent", in.key)
		}
		return fmt.Sprintf("get(%s) -> %s", in.key, out.value)
	},
	DescribeState: func(state interface{}) string {
		st := state.(regOutput)
		if !st.found {
			return "absent"
		}
		return st.value
	},
}

// recorder collects the history and the acknowledged unique writes.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	// acked: unique keys whose put was acknowledged, with their value.
	acked map[string]string
	// counts
	puts, gets, unknown, definite, readErrs int
	// gate: every client operation holds it shared; a fault that needs a
	// quiet cluster holds it exclusively (no client operation in flight).
	gate sync.RWMutex
}

func (r *recorder) now() int64 { return time.Since(r.start).Nanoseconds() }

func (r *recorder) add(op porcupine.Operation) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// worker runs one client's operations until ctx ends or count runs out:
// alternately an operation on a register key (a put of a unique value or
// a linearizable get) and a put of a unique key never written again.
func (r *recorder) worker(ctx context.Context, id int, c *client.Client, registers []string, count int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	tick := time.NewTicker(4 * time.Millisecond)
	defer tick.Stop()
	for n := 0; n < count && ctx.Err() == nil; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r.gate.RLock()
		r.operate(ctx, id, c, registers, rng, n)
		r.gate.RUnlock()
	}
}

// operate runs operation n of client id.
func (r *recorder) operate(ctx context.Context, id int, c *client.Client, registers []string, rng *rand.Rand, n int) {
	if n%2 == 1 {
		key := fmt.Sprintf("u/%d/%d", id, n)
		opCtx, cancel := context.WithTimeout(ctx, 4*time.Second)
		_, err := c.Put(opCtx, []byte(key), []byte(key))
		cancel()
		r.mu.Lock()
		if err == nil {
			r.acked[key] = key
		}
		r.mu.Unlock()
		return
	}
	key := registers[rng.IntN(len(registers))]
	in := regInput{key: key, put: rng.IntN(2) == 0, value: fmt.Sprintf("%d.%d", id, n)}
	call := r.now()
	opCtx, cancel := context.WithTimeout(ctx, 4*time.Second)
	var out regOutput
	var err error
	if in.put {
		_, err = c.Put(opCtx, []byte(key), []byte(in.value))
	} else {
		var v []byte
		v, _, out.found, err = c.Get(opCtx, []byte(key))
		out.value = string(v)
	}
	cancel()
	ret := r.now()
	r.mu.Lock()
	switch {
	case err == nil && in.put:
		r.puts++
	case err == nil:
		r.gets++
	case !in.put:
		r.readErrs++ // a failed read changed nothing: not in the history
		r.mu.Unlock()
		return
	case errors.Is(err, client.ErrUnknown) || ctx.Err() != nil || isDeadline(err):
		r.unknown++
		out.unknown, ret = true, math.MaxInt64 // may take effect at any time, or never
	default:
		r.definite++ // definitely not applied: not in the history
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	r.add(porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
}

func isDeadline(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "deadline")
}
