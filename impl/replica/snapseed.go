package replica

import (
	"context"
	"fmt"
	"io"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// SeedMember prepares a new member's storage from a state machine's
// snapshot at (index, term), for a cluster bootstrapped from a backup: a
// snapshot file in snapDir (written, fdatasync'd, renamed, the directory
// synced: what the runtime writes), and an empty WAL in walDir restarting
// after index with the chain value ChainSeed(index, term), hard state term
// and a learned commit index of index. The replica then boots by row B3
// (restore the snapshot, an empty log after it, CLEAN): every member seeded
// from the same snapshot holds the same log, so any of them may lead, and
// the records a leader ships after index verify. write streams the state
// (Snapshotter's format); voters are the new cluster's. walDir must hold
// no log yet; walOpts are the WAL's options (SegmentBytes).
func SeedMember(fsys vfs.FS, walDir, snapDir string, walOpts wal.Options, index, term uint64, voters []raft.NodeID,
	write func(io.Writer) error) error {
	if index == 0 || term == 0 {
		return fmt.Errorf("replica: seed: a snapshot at %d/%d (an empty state needs no seed)", term, index)
	}
	chain := wal.ChainSeed(index, term)
	meta := SnapshotMeta{Index: index, Term: term, Chain: chain, Voters: voters, BlockBytes: 64 << 10}
	header, err := encodeSnapHeader(&meta)
	if err != nil {
		return err
	}
	store := snapStore{fs: fsys, dir: snapDir}
	if err := fsys.MkdirAll(snapDir); err != nil {
		return fmt.Errorf("replica: seed: %w", err)
	}
	if err := newMakeJob(store, meta, header, write).Run(); err != nil {
		return fmt.Errorf("replica: seed: %w", err)
	}
	w, rec, err := wal.Open(fsys, walDir, walOpts)
	if err != nil {
		return fmt.Errorf("replica: seed: %w", err)
	}
	if rec.IndexLast != 0 || rec.HardState != (wal.HardState{}) {
		_ = w.Close()
		return fmt.Errorf("replica: seed: %s already holds a log (entries up to %d, term %d)", walDir, rec.IndexLast, rec.HardState.Term)
	}
	err = w.ResetChain(index, term, chain)
	if err == nil {
		err = w.SetHardState(wal.HardState{Term: term, Commit: index})
	}
	if err == nil {
		err = w.Sync(context.Background())
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("replica: seed: the WAL: %w", err)
	}
	return nil
}
