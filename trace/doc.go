// Package trace defines the event format that spec/ and impl/ both emit: one
// JSON object per line (ndjson), one line per step, naming the TLA+ action,
// the node that took it, the message it consumed when there is one, the
// nondeterministic choices it made, and the node's state after it.
//
// # Format
//
// docs/trace-format.md is the reference. In short, line 0 is an Init event
// carrying the model's constants ([Config], with the servers' names); every
// later line is a step:
//
//	{"v":2,"seq":3,"action":"HandleAppendEntriesBatch","node":"s2","peer":"s1",
//	 "msg":{"mtype":"AppendEntriesRequest","mterm":2,...},"branch":"append",
//	 "state":{"currentTerm":2,"state":"Follower","votedFor":"s1","logKeep":4,
//	          "logAppend":[{"term":2,"values":[1,3]}],...}}
//
// A state logs the node's log as a change since the node's previous event
// (version 2); version 1, still read, logs it whole ([ToVersion1],
// [ToVersion2] convert). Bookkeeping-only variables of raft.tla (mlog,
// elections, allLogs, voterLog) are not logged. Fields of the post-state
// that an emitter does not track (an implementation abstracts the leader's
// bookkeeping, for example) are left out, and a checker compares only the
// fields present.
//
// # Strictness
//
// [Reader] (and [Decode]) accepts versions [MinVersion]..[Version], one per
// trace, known actions and message types, the exact field set raft.tla
// gives each message type, servers among the config's names, values within
// the limits (checked before anything they bound is allocated), and log
// changes that apply to the node's previous log; anything else is an error
// naming the line. A torn last line is reported as such ([ErrTornLine]), or
// dropped with [ReadOptions].TornTail.
package trace
