package wal

import "fmt"

// assert panics with context when an invariant of the WAL's own state does not hold.
// It guards programming errors only: data read from disk or handed in by a caller is
// validated and answered with an error, never with assert.
func assert(ok bool, format string, args ...any) {
	if !ok {
		panic(fmt.Sprintf("wal: invariant violated: "+format, args...))
	}
}
