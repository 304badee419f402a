// Package trace defines the event format that spec/ and impl/ both emit: one
// JSON object per line (ndjson), one line per step, naming the TLA+ action,
// the node that took it, the message it consumed when there is one, the
// nondeterministic choices it made, and the node's state after it.
//
// # Format
//
// docs/trace-format.md is the reference. In short, line 0 is an Init event
// carrying the model's constants ([Config]); every later line is a step:
//
//	{"v":1,"seq":3,"action":"HandleAppendEntriesRequest","node":"s2","peer":"s1",
//	 "msg":{"mtype":"AppendEntriesRequest","mterm":2,...},"branch":"append",
//	 "state":{"currentTerm":2,"state":"Follower","votedFor":"s1","log":[...],...}}
//
// Bookkeeping-only variables of raft.tla (mlog, elections, allLogs,
// voterLog) are not logged: a checker rebuilds them. Fields of the
// post-state that an emitter does not track (an implementation abstracts
// the leader's bookkeeping, for example) are left out, and a checker
// compares only the fields present.
//
// # Strictness
//
// [Decode] accepts only the current [Version], known actions and message
// types, the exact field set raft.tla gives each message type, and values
// within range; anything else is an error naming the line.
package trace
