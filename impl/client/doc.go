// Package client is the Go client of a raftd cluster over the pipelined
// client protocol (impl/kvproto): many requests in flight on one
// connection, batched into frames of the peer transport's format, to the
// leader (a follower's not_leader answer names it and the client moves
// there).
//
// # Outcomes
//
// Every write ends in one of: success (the store's answer); a definite
// failure (*Error, *MismatchError: nothing was applied, or it was applied
// with that answer); or ErrUnknown: an attempt may have reached the log
// and no answer could be had before the deadline. With a session (the
// default) the client retries a write across lost answers, leader changes
// and reconnections under its sequence number, so it is applied exactly
// once if it is applied at all (docs/kv.md, "Sessions"); only the deadline
// or an expired session leaves it unknown. Without a session
// (Config.NoSession) writes are at-least-once and a lost answer is
// ErrUnknown at once.
//
// Reads are linearizable (a ReadIndex round on the leader); GetStale reads
// whichever member the client is connected to.
package client
