package sim

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/durableraft/durableraft/spec"
)

// Verdict is the outcome of a run with every check: the simulator's
// invariants on every step, the KV checks at the end, porcupine on the
// client history, and the spec's trace checker on the trace.
type Verdict struct {
	// Violation is the first check that failed ("" when none did), named
	// first: an invariant's name, "Linearizability" or "Trace".
	Violation string
	// Linearizable is porcupine's verdict; Info what its visualization
	// needs.
	Linearizable porcupine.CheckResult
	Info         porcupine.LinearizationInfo
	// TraceEvents is how many events the spec checked.
	TraceEvents int
	// The wall time of the run, of porcupine, of the trace check.
	RunTime, PorcupineTime, TraceTime time.Duration
}

// PorcupineTimeout bounds porcupine's search: a history it cannot decide
// in this time fails the run (its verdict is then Unknown).
const PorcupineTimeout = 20 * time.Second

// Check runs one simulation and every check on it. The error is for a run
// that could not be set up, never for a violation.
func Check(o Options) (*Sim, Verdict, error) {
	s, err := New(o)
	if err != nil {
		return nil, Verdict{}, err
	}
	t0 := time.Now()
	if err := s.Run(); err != nil {
		return s, Verdict{}, err
	}
	s.runTime = time.Since(t0)
	return s, s.verdict(), nil
}

// verdict runs porcupine and the trace check after a run.
func (s *Sim) verdict() Verdict {
	v := Verdict{RunTime: s.runTime}
	if len(s.Violations) > 0 {
		v.Violation = s.Violations[0]
	}
	t1 := time.Now()
	v.Linearizable, v.Info = CheckLinearizable(s.history, PorcupineTimeout)
	t2 := time.Now()
	v.PorcupineTime = t2.Sub(t1)
	if v.Violation == "" {
		switch v.Linearizable {
		case porcupine.Illegal:
			v.Violation = fmt.Sprintf("Linearizability: porcupine finds the history of %d operations not linearizable", len(s.history))
		case porcupine.Unknown:
			v.Violation = fmt.Sprintf("Linearizability: porcupine could not decide the history of %d operations in %v (a timeout fails the run)",
				len(s.history), PorcupineTimeout)
		}
	}
	if v.Violation == "" && s.opts.Trace {
		ev := s.CheckableEvents()
		v.TraceEvents = len(ev)
		if err := spec.CheckTrace(ev); err != nil {
			v.Violation = "Trace: rejected by the spec: " + err.Error()
		}
		v.TraceTime = time.Since(t2)
	}
	return v
}
