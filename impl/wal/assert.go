package wal

import "fmt"

// assert panics with context when an invariant of the WAL's own state does not hold.
// It guards programming errors only: data read from disk or handed in by a caller is
// validated and answered with an error, never with assert.
//
// Its arguments are boxed into interfaces (a heap allocation each) before ok is
// looked at: on a per-record or per-batch path write `if !ok { violated(...) }`
// instead, which boxes only on the way to the panic.
func assert(ok bool, format string, args ...any) {
	if !ok {
		violated(format, args...)
	}
}

// violated panics with context: an invariant of the WAL's own state does not hold.
func violated(format string, args ...any) {
	panic(fmt.Sprintf("wal: invariant violated: "+format, args...))
}
