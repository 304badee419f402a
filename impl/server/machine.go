package server

import (
	"io"
	"sync"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
)

// machine is the replica's state machine: the KV store, applied on the
// replica's goroutine. Other goroutines read it (stale reads, status)
// under the read lock; linearizable reads are served inside the read's
// Done, on the replica's goroutine, where the store is exactly at the
// applied index the read waited for.
type machine struct {
	mu sync.RWMutex
	st *kv.Store
}

var (
	_ replica.StateMachine = (*machine)(nil)
	_ replica.Snapshotter  = (*machine)(nil)
)

func newMachine(opts kv.Options) *machine { return &machine{st: kv.NewStore(opts)} }

// Apply implements replica.StateMachine: the entry's data is a kv
// command's encoding or empty (the core's no-op); the result's encoding
// goes back to the proposer.
func (m *machine) Apply(e raft.Entry) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.Apply(e.Index, e.Term, e.Data)
}

// Snapshot implements replica.Snapshotter: a clone of the store as of the
// last entry applied (one pass over the keys, on the replica's goroutine),
// which writes itself while the store goes on applying.
func (m *machine) Snapshot() (func(w io.Writer) error, error) {
	m.mu.RLock()
	c := m.st.Clone()
	m.mu.RUnlock()
	return c.Snapshot, nil
}

// Restore implements replica.Snapshotter: the store becomes the state r
// streams, which must end at (index, term); on any error it is unchanged.
// Readers wait while the stream is read (an install or a boot).
func (m *machine) Restore(r io.Reader, index, term uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.RestoreAt(r, index, term)
}

// get reads key. The value is the store's own, never modified.
func (m *machine) get(key []byte) (value []byte, revision uint64, found bool, applied uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, rev, ok := m.st.Get(key)
	return v, rev, ok, m.st.AppliedIndex()
}

// KVStatus is the store's part of /v1/status.
type KVStatus struct {
	AppliedIndex uint64   `json:"applied_index"`
	Keys         int      `json:"keys"`
	Sessions     int      `json:"sessions"`
	Hash         string   `json:"hash"`
	ClockMs      uint64   `json:"clock_ms"`
	Stats        kv.Stats `json:"stats"`
}

func (m *machine) status() KVStatus {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return KVStatus{AppliedIndex: m.st.AppliedIndex(), Keys: m.st.Len(), Sessions: m.st.SessionCount(),
		Hash: hex64(m.st.Hash()), ClockMs: m.st.ClockMs(), Stats: m.st.Stats()}
}

func hex64(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for k := 15; k >= 0; k-- {
		b[k] = digits[v&15]
		v >>= 4
	}
	return string(b[:])
}
