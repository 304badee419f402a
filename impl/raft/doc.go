// Package raft is the production protocol core: a Raft replicated log in
// which an acknowledgment means the write is fdatasync'd on a majority. It
// implements the protocol of spec/ (profile durable, with the production
// actions of spec/production.go) and proves it run by run: every step it
// takes can be written as a trace/ event, and spec.CheckTrace (and TLC's
// trace validation) replays the traces.
//
// # Shape
//
// A [Node] is a pure state machine in the manner of etcd-io/raft: no I/O,
// no goroutine, no clock (TestCoreIsPure checks the imports). Inputs:
// [Node.Step] (a message), [Node.Tick] (time), [Node.Propose],
// [Node.ReadIndex], [Node.TransferLeadership], [Node.Campaign], and
// [Node.Advance] (what the WAL made durable, or that it failed). Outputs
// come in a [Ready]: the hard state and entries to persist, the messages
// that may leave at once and those that wait for persistence, the committed
// entries to apply, read states and operator alerts. Older entries are read
// back through [Storage], which the core defines; [MemoryStorage] is one.
// The caller's recovered state enters through [Boot]; the core does not
// import impl/wal.
//
// # The durable rules (docs/durable-raft.md)
//
//   - The leader counts itself in the commit quorum only up to its durable
//     index; a follower acknowledges an AppendEntries only once every entry
//     it carries is durable (the acknowledgment waits; nothing else does).
//   - A candidate advertises its durable tip; a voter grants only if that
//     tip is at least its own durable tip in Raft's order and its index
//     reaches the voter's learnedCommit; a TRUNCATED member grants no vote.
//   - learnedCommit, truncatedAtTerm, term and vote are hard state.
//   - The promotion fence: a TRUNCATED member, or one whose durable index is
//     below learnedCommit, neither campaigns nor becomes leader; the
//     TRUNCATED verdict ends only by spec's FenceReleases. The boot policy
//     decision table of seed 000 (boot.go) classifies the member on every
//     tick; a fence lasting without a leader is the loud permanent fence,
//     reported every Config.AlertTicks. The node never exits.
//   - A failed WAL: the node acknowledges nothing, grants no vote, steps
//     down, and says so, until it restarts.
//   - A lost hard state (Boot.HardStateLost, impl/wal rows H2, H6, H7,
//     H8): the member may have voted and acknowledged in a term it no
//     longer knows, so for its whole life it grants no vote, never
//     campaigns or leads, and its AppendEntries responses are passive
//     (MsgAppRespPassive: flow control for the leader, counted toward no
//     quorum); it keeps and applies the log, reports AlertHardStateLost
//     every Config.AlertTicks, and traces nothing (outside the spec).
//
// # What a production Raft adds
//
// Many entries per AppendEntries (Config.MsgEntriesMax, MsgBytesMax: what
// a node sends; what it accepts is bounded by the protocol's WireEntriesMax
// and WireBytesMax, so members with different limits still replicate);
// pipelining with flow control (probe and replicate states, an inflight
// window per follower); the leader's AppendEntries leave before its own
// write is durable; proposals between two Readies go out in one batch; fast
// back-off by the follower's (index, term) hint; heartbeats at the leader's
// last index; randomized election timeouts from Config.Rand; pre-vote and
// check-quorum; ReadIndex and an opt-in lease read (read.go states its
// clock assumption); leadership transfer. Every field of every message is
// validated at the gate ([Validate]); [MarshalMessage] and
// [UnmarshalMessage] are the strict wire encoding.
//
// # Membership (docs/membership.md)
//
// Single-server changes with learners: configuration entries in the log
// (EncodeMembership), the latest in force from its append; ChangeConfig
// with the spec's two guards; quorums and progress in the subpackages
// quorum/ and tracker/ (etcd-io/raft's shape); learners replicated to but
// never counted and never campaigning; a removed leader hands over and
// steps down once its removal commits; ids are never reused.
//
// # Refinement
//
// docs/refinement.md maps every step of the core to spec actions, names the
// variables a trace is compared on, and lists the conditions the driver
// must meet. Config.Trace turns tracing on; nil costs nothing
// (BenchmarkStepTraceOff: 0 allocations). Config.TestingBugs re-introduces
// the failures the durable rules prevent, one switch per spec -bug.
//
// # Tests
//
// testdata/*.txt are scenario scripts run by the harness of package
// rafttest (interaction_test.go: outputs and cluster invariants);
// random_test.go runs seeded randomized clusters with every fault;
// validate_test.go holds every bound of Validate at its boundary (each case
// fails when its check is dropped); the message fuzz targets (fuzz_test.go)
// require that a refused message changes nothing in the node and that after
// an accepted one the node, and every message it sends, is within the
// documented ranges. Nothing
// under impl/ imports spec/ (TestImplLayering): conformance/coretrace runs
// the same scripts and seeds and replays every trace with spec.CheckTrace,
// requires each bug switch to fail a scenario, and keeps the impl traces of
// tla/traces/impl/.
package raft
