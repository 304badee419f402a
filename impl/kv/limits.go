package kv

// Limits. They are part of the replicated protocol, not configuration: the
// decoder enforces them inside Apply, so two replicas with different limits
// would answer the same entry differently and diverge. Changing one is a
// change of the command format (docs/kv.md).
const (
	// KeyBytesMax bounds a key; keys are 1..KeyBytesMax bytes.
	KeyBytesMax = 4 << 10
	// ValueBytesMax bounds a value (and the expected value of a CAS on
	// value); values are 0..ValueBytesMax bytes.
	ValueBytesMax = 256 << 10
	// CommandBytesMax is the largest encoded command: a CAS on value with a
	// key and two values at their limits. It fits the core's default
	// EntryBytesMax (1 MiB).
	CommandBytesMax = commandHeaderBytes + 3*4 + KeyBytesMax + 2*ValueBytesMax

	// SessionWindowMax bounds the responses a session keeps: a request
	// whose sequence number is SessionWindowMax or more above the session's
	// lowest unacknowledged sequence number is refused (CodeWindowFull).
	SessionWindowMax = 1024
	// SessionsMax bounds the live sessions; a registration beyond it is
	// refused (CodeSessionLimit).
	SessionsMax = 4096
	// SessionTimeoutMsMax bounds the timeout a client asks for (7 days).
	SessionTimeoutMsMax = 7 * 24 * 3600 * 1000

	// TimeMsMax bounds the leader-stamped time; SeqMax bounds sequence
	// numbers; RevisionMax bounds revisions and indexes (impl/raft's
	// IndexMax). They keep every sum far from overflow.
	TimeMsMax   uint64 = 1 << 62
	SeqMax      uint64 = 1 << 62
	RevisionMax uint64 = 1 << 62

	// messageBytesMax bounds the message of a CodeBadCommand result.
	messageBytesMax = 256
)
