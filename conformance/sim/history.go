package sim

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/durableraft/durableraft/impl/kv"
)

// HistoryOp is one client operation of a run's history: what the client
// asked, what it got, when (virtual nanoseconds). An unknown write (no
// answer, and an attempt may have reached a log) may take effect at any
// time after its call, or never: its Return is the latest moment it can
// take effect as the client knows it (unknownWrite), or -1 when there is
// none (porcupine then sees it return after every other operation).
type HistoryOp struct {
	Client  int           `json:"client"`
	Lane    int           `json:"lane"` // the client's slot: one row of the visualization
	Session uint64        `json:"session,omitempty"`
	Seq     uint64        `json:"seq,omitempty"`
	Input   Input         `json:"input"`
	Output  Output        `json:"output"`
	Call    time.Duration `json:"call"`
	Return  time.Duration `json:"return"`
	// answer is the store's answer the client received (executed writes).
	answer []byte
}

// History is the run's client history, in the order operations ended.
func (s *Sim) History() []HistoryOp { return s.history }

// WriteHistory writes the history as ndjson, one operation a line.
func WriteHistory(w io.Writer, h []HistoryOp) error {
	enc := json.NewEncoder(w)
	for k := range h {
		if err := enc.Encode(&h[k]); err != nil {
			return err
		}
	}
	return nil
}

// kvState is one key's state in the model: absent, or a value with its
// revision (0 while it is not known: written by an unknown operation).
type kvState struct {
	present bool
	value   string
	rev     uint64
}

// KVModel is the sequential specification porcupine checks the history
// against, partitioned by key: a register with a revision per key, with
// get, put, delete, and compare-and-swap on value and on revision. It is
// nondeterministic only where the history does not say (a CAS on revision
// over a revision no answer revealed).
var KVModel = (&porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(Input).Key
			by[k] = append(by[k], op)
		}
		keys := make([]string, 0, len(by))
		for k := range by {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, len(keys))
		for i, k := range keys {
			out[i] = by[k]
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{kvState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		return kvStep(state.(kvState), input.(Input), output.(Output))
	},
	Equal: func(a, b interface{}) bool { return a.(kvState) == b.(kvState) },
	Hash: func(state interface{}) uint64 {
		st := state.(kvState)
		h := fnv.New64a()
		fmt.Fprintf(h, "%v/%s/%d", st.present, st.value, st.rev)
		return h.Sum64()
	},
	DescribeOperation: func(input, output interface{}) string {
		return fmt.Sprintf("%v -> %v", input.(Input), output.(Output))
	},
	DescribeState: func(state interface{}) string {
		st := state.(kvState)
		if !st.present {
			return "absent"
		}
		if st.rev == 0 {
			return st.value + "@?"
		}
		return fmt.Sprintf("%s@%d", st.value, st.rev)
	},
}).ToModel()

func (o Output) String() string {
	switch {
	case o.Unknown:
		return "unknown"
	case o.Found:
		return fmt.Sprintf("%s@%d", o.Value, o.Rev)
	case o.Code == kv.CodeOK && o.Rev != 0:
		return fmt.Sprintf("ok@%d", o.Rev)
	case o.Code == kv.CodeMismatch:
		return fmt.Sprintf("mismatch(current @%d)", o.Rev)
	}
	return o.Code.String()
}

// kvStep is the model's step: the states the key can be in after the
// operation, given what it returned (none: it could not have returned
// that).
func kvStep(st kvState, in Input, out Output) []interface{} {
	if out.Unknown {
		return unknownStep(st, in)
	}
	one := func(s kvState) []interface{} { return []interface{}{s} }
	written := kvState{present: true, value: in.Value, rev: out.Rev}
	// A successful write gets a revision above the key's (log order).
	revUp := !st.present || st.rev == 0 || out.Rev > st.rev
	switch in.Kind {
	case OpGet:
		switch {
		case !out.Found && !st.present:
			return one(st)
		case out.Found && st.present && out.Value == st.value && (st.rev == 0 || st.rev == out.Rev):
			return one(kvState{present: true, value: st.value, rev: out.Rev})
		}
		return nil
	case OpPut:
		if out.Code == kv.CodeOK && revUp {
			return one(written)
		}
		return nil
	case OpDelete:
		switch {
		case out.Code == kv.CodeOK && st.present:
			return one(kvState{})
		case out.Code == kv.CodeNotFound && !st.present:
			return one(st)
		}
		return nil
	}
	match, ambiguous := casMatch(st, in)
	switch {
	case out.Code == kv.CodeOK && (match || ambiguous) && revUp:
		return one(written)
	case out.Code == kv.CodeMismatch && !match:
		// The answer carries the key's current revision (0: absent).
		switch {
		case !st.present && out.Rev == 0:
			return one(st)
		case st.present && (st.rev == out.Rev || (st.rev == 0 && out.Rev != 0 && (in.Kind != OpCASRev || out.Rev != in.ExpectedRev))):
			return one(kvState{present: true, value: st.value, rev: out.Rev})
		}
	}
	return nil
}

// unknownStep: a write whose outcome is unknown took effect (as it would
// on this state, its revision not known) or did not.
func unknownStep(st kvState, in Input) []interface{} {
	written := kvState{present: true, value: in.Value}
	switch in.Kind {
	case OpPut:
		return []interface{}{written, st}
	case OpDelete:
		if !st.present {
			return []interface{}{st}
		}
		return []interface{}{kvState{}, st}
	}
	if match, ambiguous := casMatch(st, in); match || ambiguous {
		return []interface{}{written, st}
	}
	return []interface{}{st}
}

// casMatch says whether a compare-and-swap matches the state, or whether
// the model cannot tell (a CAS on a revision the history never revealed).
func casMatch(st kvState, in Input) (match, ambiguous bool) {
	if in.Kind == OpCAS {
		return st.present && st.value == in.Expected, false
	}
	switch {
	case !st.present:
		return in.ExpectedRev == 0, false
	case st.rev == 0:
		return false, in.ExpectedRev != 0
	}
	return st.rev == in.ExpectedRev, false
}

// porcupineOps turns the history into porcupine's operations: an unknown
// write returns after every other operation.
func porcupineOps(h []HistoryOp) []porcupine.Operation {
	var end time.Duration
	for _, op := range h {
		end = max(end, op.Return, op.Call)
	}
	ops := make([]porcupine.Operation, len(h))
	for k, op := range h {
		ret := op.Return
		if op.Output.Unknown {
			ret = end + 1
		}
		ops[k] = porcupine.Operation{ClientId: op.Lane, Input: op.Input, Call: int64(op.Call), Output: op.Output, Return: int64(ret)}
	}
	return ops
}

// CheckLinearizable checks the history with porcupine within timeout. It
// returns porcupine's verdict (Ok, Illegal, or Unknown on a timeout) and
// the information its visualization needs.
func CheckLinearizable(h []HistoryOp, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsVerbose(KVModel, porcupineOps(h), timeout)
}

// WriteVisualization writes porcupine's HTML visualization of a checked
// history.
func WriteVisualization(path string, info porcupine.LinearizationInfo) error {
	return porcupine.VisualizePath(KVModel, info, path)
}
