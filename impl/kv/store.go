package kv

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Options configures a store.
type Options struct {
	// TestingBugs re-introduces the failures the session rules prevent, one
	// switch per rule (bugs.go). Tests and the simulator only.
	TestingBugs Bug
	// OnMark receives every coverage mark the store passes (marks.go); nil
	// (the default) reports none, at no cost.
	OnMark func(Mark)
}

// item is one key's value and revision.
//
// Invariants: 1 <= revision <= the applied index; len(value) <=
// ValueBytesMax; value is never modified once stored (Get hands it out);
// hash is the hasher's key element of (key, value, revision).
type item struct {
	value    []byte
	revision uint64
	hash     uint64
}

// Store is the KV state machine: a map from keys to values with revisions,
// and the client sessions, changed only by Apply (one committed entry after
// another) and Restore. It is not safe for concurrent use: the caller
// serializes Apply, reads and snapshots.
//
// Invariants: every key is 1..KeyBytesMax bytes; sessions and expiry hold
// the same sessions; clockMs is the largest TimeMs applied (or restored);
// hash is the sum of the element hashes of hash.go over the whole state.
type Store struct {
	items        map[string]item
	sessions     map[uint64]*session
	expiry       expiryHeap
	appliedIndex uint64
	appliedTerm  uint64
	clockMs      uint64
	clockHash    uint64
	hash         uint64

	hasher *hasher
	bugs   Bug
	onMark func(Mark)
	rows   [rowEnd]uint64
	stats  Stats
}

// Stats counts what the store has done since it was made (not state: they
// are in no hash or snapshot, and Restore keeps them).
type Stats struct {
	Applied     uint64 // entries applied
	BadCommands uint64 // entries whose data is not a valid command
	Executed    uint64 // writes executed

	// The session rows (docs/kv.md): writes without a session (S1), on no
	// live session (S2, and keep-alives and closes of one), below the lowest
	// unacknowledged sequence number (S3), answered from the session (S4:
	// retries deduplicated), beyond the window (S5), executed and kept (S6).
	NoSession, SessionMisses, Stale, Deduplicated, WindowFull, Kept uint64

	SessionsRegistered, SessionsExpired, SessionsClosed uint64
	SessionLimit                                        uint64 // registrations refused
	Restores                                            uint64
}

// NewStore returns an empty store at applied index 0.
func NewStore(opts Options) *Store {
	st := &Store{hasher: newHasher(), bugs: opts.TestingBugs, onMark: opts.OnMark}
	st.reset()
	return st
}

func (st *Store) reset() {
	st.items = map[string]item{}
	st.sessions = map[uint64]*session{}
	st.expiry = nil
	st.appliedIndex, st.appliedTerm = 0, 0
	st.clockMs = 0
	st.clockHash = st.hasher.clock(0)
	st.hash = st.clockHash
}

// Apply applies one committed entry: index must be AppliedIndex()+1 and term
// at least the last one applied (a caller that breaks this panics: the
// replica would diverge). data is the entry's data, a command's encoding or
// empty (the core's own no-op entries). It returns the result's encoding, for
// the entry's proposer. Data that is not a valid command is answered with
// CodeBadCommand and changes nothing but the applied index: every replica
// answers the same bytes the same way.
func (st *Store) Apply(index, term uint64, data []byte) []byte {
	return st.ApplyData(index, term, data).Marshal()
}

// ApplyData is Apply with the result not encoded.
func (st *Store) ApplyData(index, term uint64, data []byte) Result {
	st.advance(index, term)
	if len(data) == 0 {
		return Result{Code: CodeOK, Index: index}
	}
	c, err := DecodeCommand(data)
	if err != nil {
		st.stats.BadCommands++
		return badCommand(index, err)
	}
	return st.exec(index, c)
}

// ApplyCommand is Apply of c's encoding without the encoding: it answers and
// changes the state exactly as Apply(index, term, encoding of c) would
// (CodeBadCommand if c does not validate).
func (st *Store) ApplyCommand(index, term uint64, c Command) Result {
	st.advance(index, term)
	if err := c.Validate(); err != nil {
		st.stats.BadCommands++
		return badCommand(index, err)
	}
	return st.exec(index, c)
}

func (st *Store) advance(index, term uint64) {
	if index != st.appliedIndex+1 || index > RevisionMax {
		violated("apply of index %d after applied index %d", index, st.appliedIndex)
	}
	if term < st.appliedTerm {
		violated("apply of index %d at term %d after term %d", index, term, st.appliedTerm)
	}
	st.appliedIndex, st.appliedTerm = index, term
	st.stats.Applied++
}

func (st *Store) exec(index uint64, c Command) Result {
	if c.TimeMs > st.clockMs {
		st.hash -= st.clockHash
		st.clockMs = c.TimeMs
		st.clockHash = st.hasher.clock(c.TimeMs)
		st.hash += st.clockHash
		st.expire()
	}
	switch c.Op {
	case OpNoop:
		return Result{Code: CodeOK, Index: index}
	case OpRegister:
		return st.register(index, c)
	case OpKeepAlive:
		return st.keepAlive(index, c)
	case OpClose:
		return st.closeSession(index, c)
	}
	return st.request(index, c)
}

// write executes a KV write at index.
func (st *Store) write(index uint64, c Command) Result {
	st.stats.Executed++
	it, found := st.items[string(c.Key)]
	current := it.revision // 0 when absent
	mismatch := Result{Code: CodeMismatch, Index: index, Revision: current}
	switch c.Op {
	case OpPut:
	case OpCASValue:
		if !found || !bytes.Equal(it.value, c.ValueExpected) {
			return mismatch
		}
	case OpCASRevision:
		if current != c.RevisionExpected {
			return mismatch
		}
	case OpDelete:
		if !found {
			return Result{Code: CodeNotFound, Index: index}
		}
		st.remove(c.Key, it)
		return Result{Code: CodeOK, Index: index}
	case OpDeleteIfRevision:
		if current != c.RevisionExpected {
			return mismatch
		}
		st.remove(c.Key, it)
		return Result{Code: CodeOK, Index: index}
	default:
		violated("write of op %v", c.Op)
	}
	st.set(c.Key, it, found, c.Value, index)
	return Result{Code: CodeOK, Index: index, Revision: index}
}

// set stores a copy of value at key (whose item is old when found). Items
// are values in the map, replaced whole, never changed in place: a Clone
// shares none of them with the store (and costs one copy of the map).
func (st *Store) set(key []byte, old item, found bool, value []byte, revision uint64) {
	if len(key) < 1 || len(key) > KeyBytesMax || len(value) > ValueBytesMax || revision < 1 || revision > st.appliedIndex {
		violated("set of key of %d bytes, value of %d bytes at revision %d (applied %d)", len(key), len(value), revision, st.appliedIndex)
	}
	if found {
		st.hash -= old.hash
	}
	it := item{value: bytes.Clone(value), revision: revision}
	if it.value == nil {
		it.value = []byte{}
	}
	it.hash = hashItem(st.hasher, key, it.value, revision)
	st.hash += it.hash
	st.items[string(key)] = it
}

func (st *Store) remove(key []byte, it item) {
	st.hash -= it.hash
	delete(st.items, string(key))
}

// hashItem is the key element of hash.go.
func hashItem[K ~string | ~[]byte](x *hasher, key K, value []byte, revision uint64) uint64 {
	b := append(x.buf[:0], tagKey)
	b = le.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	b = le.AppendUint64(b, revision)
	x.buf = le.AppendUint32(b, uint32(len(value)))
	return x.finish(value)
}

// Get returns key's value and revision, and whether it is present. The value
// is the store's own and is never modified: the caller may keep it but must
// not modify it. A read is linearizable once AppliedIndex reaches the read
// index the runtime obtained (ReadIndex).
func (st *Store) Get(key []byte) (value []byte, revision uint64, found bool) {
	it, found := st.items[string(key)]
	return it.value, it.revision, found
}

// AppliedIndex is the index of the last entry applied (or restored).
func (st *Store) AppliedIndex() uint64 { return st.appliedIndex }

// AppliedTerm is the term of that entry.
func (st *Store) AppliedTerm() uint64 { return st.appliedTerm }

// ClockMs is the largest leader-stamped time applied.
func (st *Store) ClockMs() uint64 { return st.clockMs }

// Hash is the state hash (hash.go, docs/kv.md): equal on two replicas at the
// same applied index unless they diverged.
func (st *Store) Hash() uint64 { return st.hash }

// Len is the number of keys.
func (st *Store) Len() int { return len(st.items) }

// SessionCount is the number of live sessions.
func (st *Store) SessionCount() int { return len(st.sessions) }

// SessionInfo describes a live session.
type SessionInfo struct {
	ID, TimeoutMs, LastActiveMs, LowestUnacked uint64
	Responses                                  int // answers kept for retries
}

// Session describes the live session id.
func (st *Store) Session(id uint64) (SessionInfo, bool) {
	s := st.sessions[id]
	if s == nil {
		return SessionInfo{}, false
	}
	return SessionInfo{ID: s.id, TimeoutMs: s.timeoutMs, LastActiveMs: s.lastActiveMs, LowestUnacked: s.lowestUnacked, Responses: len(s.responses)}, true
}

// Stats returns the counters.
func (st *Store) Stats() Stats {
	s := st.stats
	s.NoSession, s.SessionMisses, s.Stale = st.rows[rowNoSession], st.rows[rowUnknown], st.rows[rowStale]
	s.Deduplicated, s.WindowFull, s.Kept = st.rows[rowCached], st.rows[rowWindow], st.rows[rowExecute]
	return s
}

// Range calls fn for every key in ascending byte order until fn returns
// false. fn must not modify the store or the slices it is handed. It costs
// one sorted slice of the keys.
func (st *Store) Range(fn func(key, value []byte, revision uint64) bool) {
	for _, p := range st.sortedItems() {
		if !fn([]byte(p.key), p.value, p.revision) {
			return
		}
	}
}

// keyed is an item with its key, for the sorted passes.
type keyed struct {
	key string
	item
}

// sortedItems is every item with its key, in ascending key order: one pass
// over the map and a sort (no lookup per key afterwards).
func (st *Store) sortedItems() []keyed {
	out := make([]keyed, 0, len(st.items))
	for k, it := range st.items {
		out = append(out, keyed{key: k, item: it})
	}
	slices.SortFunc(out, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	return out
}

func (st *Store) sortedSessions() []*session {
	out := make([]*session, 0, len(st.sessions))
	for _, s := range st.sessions {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *session) int { return cmpUint(a.id, b.id) })
	return out
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Verify checks every invariant of the store's state and recomputes the
// state hash from scratch; an error says what does not hold. It costs a
// pass over the whole state (tests run it after every step; an operator
// may run it on a live replica).
func (st *Store) Verify() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	x := newHasher()
	sum := x.clock(st.clockMs)
	if st.clockHash != sum {
		bad("clock element hash stale")
	}
	for k, it := range st.items {
		if len(k) < 1 || len(k) > KeyBytesMax || len(it.value) > ValueBytesMax || it.revision < 1 || it.revision > st.appliedIndex {
			bad("key %q: %d-byte value at revision %d (applied %d)", clip([]byte(k)), len(it.value), it.revision, st.appliedIndex)
		}
		h := hashItem(x, k, it.value, it.revision)
		if h != it.hash {
			bad("key %q: element hash stale", clip([]byte(k)))
		}
		sum += h
	}
	if len(st.expiry) != len(st.sessions) {
		bad("%d sessions, %d in the expiry heap", len(st.sessions), len(st.expiry))
	}
	for i, s := range st.expiry {
		if i > 0 && st.expiry.Less(i, (i-1)/2) {
			bad("expiry heap out of order at %d", i)
		}
		if s.heapIndex != i || st.sessions[s.id] != s {
			bad("session %d: heap position %d, at %d", s.id, s.heapIndex, i)
		}
	}
	for id, s := range st.sessions {
		sum += verifySession(st, x, id, s, bad)
	}
	if len(st.sessions) > SessionsMax {
		bad("%d sessions over %d", len(st.sessions), SessionsMax)
	}
	if sum != st.hash {
		bad("incremental hash %016x, from scratch %016x", st.hash, sum)
	}
	if len(errs) > 0 {
		return fmt.Errorf("kv: store invariants: %s", strings.Join(errs, "; "))
	}
	return nil
}

// verifySession checks one session's invariants and returns its hash
// elements' sum.
func verifySession(st *Store, x *hasher, id uint64, s *session, bad func(string, ...any)) uint64 {
	if s.id != id || id < 1 || id > st.appliedIndex || s.timeoutMs < 1 || s.timeoutMs > SessionTimeoutMsMax ||
		s.lastActiveMs > st.clockMs || s.deadline() < st.clockMs || s.lowestUnacked < 1 || s.lowestUnacked > SeqMax {
		bad("session %d: id %d timeout %d last active %d lowest unacked %d (clock %d, applied %d)",
			id, s.id, s.timeoutMs, s.lastActiveMs, s.lowestUnacked, st.clockMs, st.appliedIndex)
	}
	h := x.session(s)
	if h != s.hash {
		bad("session %d: element hash stale", id)
	}
	if len(s.responses) > SessionWindowMax {
		bad("session %d keeps %d responses", id, len(s.responses))
	}
	for i, r := range s.responses {
		if r.seq < s.lowestUnacked || r.seq-s.lowestUnacked >= SessionWindowMax || (i > 0 && r.seq <= s.responses[i-1].seq) ||
			!r.code.Executed() || r.index <= s.id || r.index > st.appliedIndex || r.result().Validate() != nil {
			bad("session %d: response %d: seq %d %v index %d rev %d (lowest unacked %d)", id, i, r.seq, r.code, r.index, r.revision, s.lowestUnacked)
		}
		h += x.response(id, r)
	}
	return h
}
