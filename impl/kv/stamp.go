package kv

import "fmt"

// StampTime sets the TimeMs of enc, a command's encoding, to timeMs in
// place: the leader's stamp on a command a client encoded, without a
// decode and an encode again (the pipelined protocol's hot path). enc must
// be an encoding DecodeCommand accepts (the caller decodes it first); the
// result is then exactly the encoding of the decoded command At(timeMs).
func StampTime(enc []byte, timeMs uint64) error {
	switch {
	case len(enc) < commandHeaderBytes || enc[0] != commandVersion:
		return fmt.Errorf("%w: not a command's encoding", ErrBadCommand)
	case timeMs > TimeMsMax:
		return fmt.Errorf("%w: time %d over %d", ErrBadCommand, timeMs, TimeMsMax)
	}
	le.PutUint64(enc[2:], timeMs)
	return nil
}
