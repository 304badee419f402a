package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// Backup and restore (docs/raftd.md, "Backup and restore").
//
// GET /v1/backup (admin) answers a consistent snapshot of the KV store: a
// ReadIndex round confirms the leadership, and the store is captured, on
// the replica's goroutine, at the applied index that round waited for, so
// the backup holds every write acknowledged before the request and the
// state as of one index. The body is the store's snapshot stream
// (kv.Store.Snapshot: checksummed, carrying its index, term and state
// hash), with the headers below. A follower judges the request (the gate)
// and forwards it to the leader, relaying the whole stream.
//
// RestoreMember prepares a data directory of a new cluster from such a
// file; every member of the new cluster is prepared from the same file,
// then started.

// Headers of a backup.
const (
	headerBackupTerm = "X-Raftd-Term"
	headerBackupHash = "X-Raftd-Hash"
)

// backupBytesMax bounds a backup relayed by a follower.
const backupBytesMax = 1 << 40

func (n *Node) handleBackup(w http.ResponseWriter, r *http.Request) {
	if n.stopping.Load() {
		n.fail(w, errorf(CodeStopping, "the node is stopping"))
		return
	}
	ctx, cancel := n.requestContext(r)
	defer cancel()
	type captured struct {
		st  *kv.Store
		err *Error
	}
	ch := make(chan captured, 1)
	done := func(rr replica.ReadResult) {
		if rr.Err != nil {
			e := readFailure(rr.Err)
			_, _, e.Leader = n.rep.Leadership()
			ch <- captured{err: e}
			return
		}
		n.sm.mu.RLock()
		c := n.sm.st.Clone()
		n.sm.mu.RUnlock()
		ch <- captured{st: c}
	}
	if err := n.run.Submit(replica.Event{Kind: replica.EventRead, Reads: []replica.Read{{Done: done}}}); err != nil {
		n.fail(w, readFailure(err))
		return
	}
	var c captured
	select {
	case c = <-ch:
	case <-ctx.Done():
		n.fail(w, errorf(CodeBusy, "the backup's read round was not confirmed in time (%v)", ctx.Err()))
		return
	case <-n.runDone:
		n.fail(w, errorf(CodeStopping, "the node stopped"))
		return
	}
	if c.err != nil {
		if !n.redirectOrForward(w, r, nil, c.err) {
			n.fail(w, c.err)
		}
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set(headerIndex, strconv.FormatUint(c.st.AppliedIndex(), 10))
	w.Header().Set(headerBackupTerm, strconv.FormatUint(c.st.AppliedTerm(), 10))
	w.Header().Set(headerBackupHash, hex64(c.st.Hash()))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		if err := c.st.Snapshot(w); err != nil {
			n.log.Warn("server: backup: the stream to the client failed", "err", err)
		}
	}
	n.log.Info("server: backup served", "index", c.st.AppliedIndex(), "term", c.st.AppliedTerm(), "keys", c.st.Len())
}

// RestoreConfig says what RestoreMember prepares.
type RestoreConfig struct {
	// ID, DataDir and Peers are the new member's, as raftd will be started
	// (--id, --data, --peers); ClusterToken enters the new cluster's id
	// together with the backup's state hash, so that the new cluster's id
	// differs from the old one's even on the same addresses.
	ID           raft.NodeID
	DataDir      string
	Peers        map[raft.NodeID]string
	ClusterToken string
	// WALSegmentBytes as raftd's --wal-segment-bytes (0: the default).
	WALSegmentBytes int64
	// Backup is the file GET /v1/backup answered (raftctl backup).
	Backup string
	// Logger receives the WAL's lines (default slog.Default()).
	Logger *slog.Logger
}

// Restored says what a restore found in the backup.
type Restored struct {
	Index, Term uint64
	Keys        int
	Hash        string
	ClusterID   string
}

// RestoreMember prepares cfg.DataDir as a member of a new cluster holding
// the backup's state: the backup is read and verified whole (checksum,
// state hash, every invariant: a damaged file is refused and nothing is
// written), then the cluster file, the snapshot and an empty log after it
// are written (replica.SeedMember). The directory must not hold a node
// yet. raftd started on it boots from the snapshot (row B3).
func RestoreMember(cfg RestoreConfig) (Restored, error) {
	var out Restored
	if cfg.ID == raft.None || cfg.DataDir == "" || len(cfg.Peers) == 0 || cfg.Backup == "" {
		return out, errors.New("server: restore needs the id, the data directory, the peers and the backup")
	}
	if _, ok := cfg.Peers[cfg.ID]; !ok {
		return out, fmt.Errorf("server: restore: node %d is not in the peers (%s)", cfg.ID, FormatPeers(cfg.Peers))
	}
	if s := cfg.WALSegmentBytes; s != 0 && (s < WALSegmentBytesMin || s%4096 != 0) {
		return out, fmt.Errorf("server: restore: WAL segments of %d bytes: at least %d, a multiple of 4096", s, WALSegmentBytesMin)
	}
	st, err := readBackup(cfg.Backup)
	if err != nil {
		return out, err
	}
	out = Restored{Index: st.AppliedIndex(), Term: st.AppliedTerm(), Keys: st.Len(), Hash: hex64(st.Hash())}
	if out.Index == 0 {
		return out, errors.New("server: restore: the backup is of an empty store (index 0): start a new cluster instead")
	}
	for _, p := range []string{clusterFile, "wal", "snap"} {
		if _, err := os.Stat(filepath.Join(cfg.DataDir, p)); err == nil {
			return out, fmt.Errorf("server: restore: %s already holds a node (%s): restore into an empty directory", cfg.DataDir, p)
		}
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return out, err
	}
	token := cfg.ClusterToken + "\x00restored " + out.Hash
	cl, _, err := loadOrCreateCluster(cfg.DataDir, cfg.ID, cfg.Peers, token, nil)
	if err != nil {
		return out, err
	}
	out.ClusterID = cl.IDHex
	err = replica.SeedMember(vfs.OS{}, filepath.Join(cfg.DataDir, "wal"), filepath.Join(cfg.DataDir, "snap"),
		wal.Options{SegmentBytes: cfg.WALSegmentBytes, Logger: cfg.Logger}, out.Index, out.Term, sortedIDs(cfg.Peers), st.Snapshot)
	if err != nil {
		return out, fmt.Errorf("server: restore: %w", err)
	}
	return out, nil
}

// readBackup reads and verifies a backup file whole.
func readBackup(path string) (*kv.Store, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server: restore: %w", err)
	}
	defer f.Close()
	st := kv.NewStore(kv.Options{})
	if err := st.Restore(f); err != nil {
		return nil, fmt.Errorf("server: restore: %s is not a good backup: %w", path, err)
	}
	return st, nil
}

// VerifyBackup reads a backup stream whole and verifies it (raftctl
// backup does before it keeps the file): its index, term, keys and state
// hash, or why it is refused.
func VerifyBackup(r io.Reader) (Restored, error) {
	st := kv.NewStore(kv.Options{})
	if err := st.Restore(r); err != nil {
		return Restored{}, err
	}
	return Restored{Index: st.AppliedIndex(), Term: st.AppliedTerm(), Keys: st.Len(), Hash: hex64(st.Hash())}, nil
}
