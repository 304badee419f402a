// Package kvproto is the pipelined client protocol between impl/client and
// impl/server: requests and responses batched into frames of impl/wire's
// format (the peer transport's), many in flight on one connection, each
// matched by the id the client gave it. docs/raftd.md has the tables.
//
// A write carries a kv.Command's encoding (impl/kv: with the client's
// session fields, so that a retry across a leader change applies once);
// the server stamps the leader's time into it. A read carries a key and is
// linearizable unless it asks to be stale. A response carries a kv.Result's
// encoding, a read's value, or an error with a code, whether the outcome is
// definite, and the leader the server knows of.
//
// The decoders are strict: every length is checked against its limit and
// the bytes that remain before anything is sliced, every enum against its
// table, and no trailing bytes; a frame that does not decode closes the
// connection.
package kvproto
