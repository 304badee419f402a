package replica

import (
	"errors"
	"fmt"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
)

// walStorage is the core's Storage over the WAL: the log the core reads
// back (catch-up, committed entries to apply, the recovered log at boot) is
// the WAL's, verified record by record on every read. There is no second
// copy of the log.
type walStorage struct{ w *wal.WAL }

var _ raft.Storage = walStorage{}

func (s walStorage) FirstIndex() uint64 { return s.w.FirstIndex() }

func (s walStorage) LastIndex() uint64 { return s.w.LastIndex() }

func (s walStorage) Term(index uint64) (uint64, error) {
	t, err := s.w.Term(index)
	return t, storageError(err)
}

func (s walStorage) Entries(lo, hi, bytesMax uint64) ([]raft.Entry, error) {
	ents, err := s.w.Entries(lo, hi, bytesMax)
	if err != nil {
		return nil, storageError(err)
	}
	out := make([]raft.Entry, len(ents))
	for k, e := range ents {
		out[k] = raft.Entry{Index: e.Index, Term: e.Term, Data: e.Data}
	}
	return out, nil
}

// storageError maps the WAL's range errors to the core's, keeping the
// WAL's error in the chain.
func storageError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, wal.ErrCompacted):
		return fmt.Errorf("%w: %w", raft.ErrCompacted, err)
	case errors.Is(err, wal.ErrOutOfRange):
		return fmt.Errorf("%w: %w", raft.ErrUnavailable, err)
	}
	return err
}

// walEntries converts the core's entries for the WAL (Data is shared: the
// WAL copies it when it encodes the records).
func walEntries(ents []raft.Entry) []wal.Entry {
	out := make([]wal.Entry, len(ents))
	for k, e := range ents {
		out[k] = wal.Entry{Index: e.Index, Term: e.Term, Data: e.Data}
	}
	return out
}

// hardStateToWAL and hardStateFromWAL convert between the core's hard
// state and the WAL's, field for field (raft.HardState's doc).
func hardStateToWAL(hs raft.HardState) wal.HardState {
	return wal.HardState{Term: hs.Term, Vote: uint64(hs.Vote), Commit: hs.LearnedCommit, TruncatedAtTerm: hs.TruncatedAtTerm, Ambiguous: hs.Ambiguous}
}

func hardStateFromWAL(hs wal.HardState) raft.HardState {
	return raft.HardState{Term: hs.Term, Vote: raft.NodeID(hs.Vote), LearnedCommit: hs.Commit, TruncatedAtTerm: hs.TruncatedAtTerm, Ambiguous: hs.Ambiguous}
}

// verdictFromWAL maps the WAL's log verdict to the core's.
func verdictFromWAL(v wal.Verdict) raft.Verdict {
	switch v {
	case wal.TornTail:
		return raft.VerdictTornTail
	case wal.Truncated:
		return raft.VerdictTruncated
	case wal.Ambiguous:
		return raft.VerdictAmbiguous
	}
	return raft.VerdictClean
}
