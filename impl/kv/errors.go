package kv

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the package returns wraps one of them (test
// with errors.Is) and says what was wrong in its message.
var (
	// ErrBadCommand: bytes that are not a valid command, or a command whose
	// fields break a rule of docs/kv.md (a field set that its op does not
	// carry, a sequence number out of range, an empty key...).
	ErrBadCommand = errors.New("kv: bad command")
	// ErrTooLarge: a key or value over its limit (KeyBytesMax,
	// ValueBytesMax). It also wraps ErrBadCommand.
	ErrTooLarge = fmt.Errorf("%w: too large", ErrBadCommand)
	// ErrBadResult: bytes that are not a valid result.
	ErrBadResult = errors.New("kv: bad result")
	// ErrBadSnapshot: a snapshot stream that is damaged, truncated or
	// inconsistent. Restore leaves the store unchanged.
	ErrBadSnapshot = errors.New("kv: bad snapshot")
)

// violated panics with context: an invariant of the store's own state does
// not hold. It guards programming errors only (a caller applying entries out
// of order, a bug here): bytes from an entry or a snapshot are validated and
// answered with an error, never with a panic. Callers test the condition
// themselves (if !cond { violated(...) }) so that the arguments are boxed
// only on failure: Apply's assertions cost no allocation.
func violated(format string, args ...any) {
	panic(fmt.Sprintf("kv: invariant violated: "+format, args...))
}
