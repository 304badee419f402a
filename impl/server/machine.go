package server

import (
	"bytes"
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
	// checkEvery: the state hash is recorded at every index that is a
	// multiple of it (the state check's agreed indexes); checkpoints keeps
	// the last checkpointsMax, oldest first.
	checkEvery  uint64
	checkpoints []checkpoint
	// divergeAt (tests only): from this index on, the recorded hashes
	// differ from the store's: a member whose state diverged, planted.
	divergeAt uint64
	// onPeerAddr, when set, is told every peer address key the store
	// applies or restores (members.go's address book), outside the lock.
	onPeerAddr func(id raft.NodeID, addr string)
}

type checkpoint struct {
	index uint64
	hash  uint64
}

const checkpointsMax = 64

var (
	_ replica.StateMachine = (*machine)(nil)
	_ replica.Snapshotter  = (*machine)(nil)
)

func newMachine(opts kv.Options) *machine { return &machine{st: kv.NewStore(opts)} }

// Apply implements replica.StateMachine: the entry's data is a kv
// command's encoding or empty (the core's no-op); the result's encoding
// goes back to the proposer.
func (m *machine) Apply(e raft.Entry) []byte {
	out := m.apply(e)
	if m.onPeerAddr != nil && bytes.Contains(e.Data, []byte(peerKeyPrefix)) {
		if c, err := kv.DecodeCommand(e.Data); err == nil && c.Op == kv.OpPut {
			if id, ok := parsePeerKey(c.Key); ok {
				m.onPeerAddr(id, string(c.Value))
			}
		}
	}
	return out
}

func (m *machine) apply(e raft.Entry) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.st.Apply(e.Index, e.Term, e.Data)
	if m.checkEvery > 0 && e.Index%m.checkEvery == 0 {
		h := m.st.Hash()
		if m.divergeAt != 0 && e.Index >= m.divergeAt {
			h ^= 0x5eed // the planted divergence
		}
		if len(m.checkpoints) == checkpointsMax {
			m.checkpoints = append(m.checkpoints[:0], m.checkpoints[1:]...)
		}
		m.checkpoints = append(m.checkpoints, checkpoint{e.Index, h})
	}
	return out
}

// checkpointAt returns the hash recorded at index.
func (m *machine) checkpointAt(index uint64) (uint64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, c := range m.checkpoints {
		if c.index == index {
			return c.hash, true
		}
	}
	return 0, false
}

// lastCheckpoint returns the newest checkpoint (index 0: none yet).
func (m *machine) lastCheckpoint() checkpoint {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(m.checkpoints) == 0 {
		return checkpoint{}
	}
	return m.checkpoints[len(m.checkpoints)-1]
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
// Readers wait while the stream is read (an install or a boot). The state
// check's checkpoints start again from the snapshot: the hashes recorded
// before were of the state this one replaces (and the snapshot's own index
// is one when it is a multiple of checkEvery).
func (m *machine) Restore(r io.Reader, index, term uint64) error {
	book, err := m.restore(r, index, term)
	if err != nil {
		return err
	}
	if m.onPeerAddr != nil {
		for id, addr := range book {
			m.onPeerAddr(id, addr)
		}
	}
	return nil
}

// restore is Restore under the lock; it returns the address book the
// restored store holds.
func (m *machine) restore(r io.Reader, index, term uint64) (map[raft.NodeID]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.st.RestoreAt(r, index, term); err != nil {
		return nil, err
	}
	book := map[raft.NodeID]string{}
	m.st.Range(func(key, value []byte, _ uint64) bool {
		if id, ok := parsePeerKey(key); ok {
			book[id] = string(value)
		}
		return bytes.HasPrefix(key, []byte(peerKeyPrefix)) || string(key) < peerKeyPrefix // sorted: past the prefix, done
	})
	m.checkpoints = m.checkpoints[:0]
	if m.checkEvery > 0 && index > 0 && index%m.checkEvery == 0 {
		h := m.st.Hash()
		if m.divergeAt != 0 && index >= m.divergeAt {
			h ^= 0x5eed
		}
		m.checkpoints = append(m.checkpoints, checkpoint{index, h})
	}
	return book, nil
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
