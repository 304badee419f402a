// Package spec is an executable specification of Raft: a literal Go
// transliteration of Diego Ongaro's raft.tla (profile "raft") plus the
// durability extensions of this project (profile "durable"), with the
// invariants both must keep and an explicit-state explorer that checks them.
//
// # Reading it beside raft.tla
//
// Every TLA+ action is a Go function with the same name that yields the
// successor states of a given state: [Model.Restart], [Model.Timeout],
// [Model.RequestVote], [Model.BecomeLeader], [Model.ClientRequest],
// [Model.AdvanceCommitIndex], [Model.AppendEntries], [Model.Receive] with
// [Model.UpdateTerm], [Model.HandleRequestVoteRequest],
// [Model.HandleRequestVoteResponse], [Model.HandleAppendEntriesRequest],
// [Model.HandleAppendEntriesResponse], [Model.DropStaleResponse], and the
// network's [Model.DuplicateMessage] and [Model.DropMessage]. Each cites the
// TLA+ it transliterates. [State] holds every raft.tla variable, history
// variables included, under the same names.
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
// format and [CheckTrace] replays a trace against the model.
package spec
