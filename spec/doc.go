// Package spec is an executable specification of Raft: a literal Go
// transliteration of Diego Ongaro's raft.tla (profile "raft") plus the
// durability extensions of this project (profile "durable"), with the
// invariants both must keep and an explicit-state explorer that checks them.
//
// # Reading it beside raft.tla
//
// Every TLA+ action is a Go function with the same name that yields the
// successor states of a given state: [Machine.Restart], [Machine.Timeout],
// [Machine.RequestVote], [Machine.BecomeLeader], [Machine.ClientRequest],
// [Machine.AdvanceCommitIndex], [Machine.AppendEntries], [Machine.Receive]
// with [Machine.UpdateTerm], [Machine.HandleRequestVoteRequest],
// [Machine.HandleRequestVoteResponse], [Machine.HandleAppendEntriesRequest],
// [Machine.HandleAppendEntriesResponse], [Machine.DropStaleResponse], and the
// network's [Machine.DuplicateMessage] and [Machine.DropMessage]. Each cites
// the TLA+ it transliterates. [StateOf] holds every raft.tla variable,
// history variables included, under the same names.
//
// # One set of actions, two representations
//
// The actions are written once, generic over the representation of terms
// and indexes, logs and voter logs ([Machine], [StateOf]): the explorer's
// [Model] and [State] use 8-bit numbers and string logs, small and
// canonically encoded; the trace checker ([TraceChecker], [TraceState])
// uses 64-bit numbers, [RunLog] logs that share their history, and keeps no
// history variables. docs/explorer.md ("State and encoding") has the split
// and its rules.
//
// # The durable profile
//
// Profile "durable" adds the variables durableLen, learnedCommit, verdict,
// truncatedAtTerm and committed, the budgets crashesLeft and
// corruptionsLeft, and the actions [Model.Flush], [Model.Crash] (which
// replaces Restart) and [Model.Corrupt]; it changes the rules of
// RequestVote, HandleRequestVoteRequest, BecomeLeader, AdvanceCommitIndex
// and HandleAppendEntriesRequest as docs/durable-raft.md explains rule by
// rule. Every change can be switched off with a [Bug] so that the failure
// it prevents can be replayed.
//
// # Explorer
//
// [Explore] enumerates reachable states breadth first under TLC's CONSTRAINT
// semantics: a successor outside the bounds is generated and checked against
// the invariants but neither counted as distinct nor expanded. [Simulate]
// takes seeded random walks. Counterexamples are written in the trace/
// format and [CheckTrace] (or [TraceChecker], event by event) replays a
// trace, of any length, against the model.
package spec
