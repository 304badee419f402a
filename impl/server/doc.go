// Package server is one raftd node: the replica runtime (impl/replica's
// Runner, the only loop that drives the protocol core) over the WAL, the
// KV store (impl/kv) as its state machine, the TCP peer transport
// (impl/transport), and the client API: HTTP/1.1 for curl and black-box
// tests, and the pipelined protocol (impl/kvproto) for the Go client, both
// on the client port (told apart by the first byte). docs/raftd.md is the
// reference: flags, the API table with its status codes, the outcomes.
//
// # Writes
//
// A write becomes a kv.Command stamped with the proposing node's clock
// (the leader's: a follower's proposal is refused with not_leader and the
// request forwarded), proposed through the runner; its answer is the kv
// result the store gave at apply. While it leads and nothing is written,
// a node proposes a kv no-op with its clock once a second, so that
// sessions expire. Every failure has a code and an outcome: definite when
// the entry never reached the log (or was applied with this answer),
// unknown (504) once it may be in the log and no answer came (errors.go).
//
// # Reads
//
// A read is linearizable: a replica EventRead confirms the leadership, and
// the store is read inside the read's Done, on the replica's goroutine, at
// exactly the index the confirmation waited for. ?stale=true reads this
// node's store as it is.
//
// # Lifecycle
//
// Open writes the cluster file at the first boot (cluster id and members;
// --peers is read only then), recovers the WAL (a TRUNCATED verdict boots
// fenced: the core refuses to campaign or vote until the fence releases;
// the node says so in its log, /v1/status and /readyz, and never exits),
// and boots the replica. Shutdown hands a leader's leadership to the most
// up-to-date follower first, then stops the API, the runner, the
// transport and the WAL.
//
// # Security
//
// With Config.TLS both ports are mutual TLS 1.3 from the cluster CA
// (impl/tlsauth; docs/security.md): the listeners are wrapped where they
// are made, the transport dials and checks members by node id, and every
// client request passes one gate (auth.go) that judges it by its route's
// role and by what its connection presented; a follower judges before it
// forwards and passes the client on. Without TLS a node listens on
// loopback only, unless Insecure.
//
// Snapshots and compaction (issue 11) are not there yet: a node replays
// its whole log at boot, and a follower far behind catches up entry by
// entry. They slot in at the state machine (kv.Store's Snapshot and
// Restore), the replica's storage, and a snapshot message type of the
// transport.
package server
