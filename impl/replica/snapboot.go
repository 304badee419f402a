package replica

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wal"
	"github.com/durableraft/durableraft/trace"
)

// The boot with snapshots: which snapshot the state machine restarts from,
// and what that means for the WAL and the verdict. Decision table rows
// (bootCases), evaluated after the WAL's own recovery:
//
//	row  usable snapshot  the WAL holds its last entry  log compacted  action                          verdict
//	B1   none             -                             no             replay the log from 1           the WAL's
//	B2   none             -                             yes            reset the WAL to empty          TRUNCATED
//	B3   S                yes                           any            restore S, replay the log after the WAL's
//	B4   S                no                            any            restore S, reset the WAL at S   TRUNCATED
//
// A usable snapshot is the newest file that verifies: a snap-… file, or a
// recv-… one whose last entry the WAL holds with its term and chain value
// (its install's reset reached the disk; otherwise the install never
// happened for the protocol and the file is removed). Files that fail
// verification are quarantined (bad-…) and the next older one is tried.
// B3 with nothing in the log after S is seed 000's snapshot sentinel:
// CLEAN, and behind whatever commit index the member learned (boot policy
// row 5), never TRUNCATED. B2 and B4 lost durable entries the state
// machine cannot be rebuilt without (a bad snapshot over a compacted log):
// the member fetches a good snapshot from the leader.

type bootAction uint8

const (
	bootReplay bootAction = iota + 1
	bootResetEmpty
	bootRestore
	bootRestoreReset
	bootAssert
)

type bootCase struct {
	row       string
	have      []bool // a usable snapshot
	held      []bool // the WAL holds its last entry (only with one)
	compacted []bool // the log starts after 1
	action    bootAction
	truncated bool
	why       string
}

var bootCases = []bootCase{
	{"B1", no, no, no, bootReplay, false, "no snapshot and the whole log: the state machine replays it"},
	{"B2", no, no, yes, bootResetEmpty, true, "no usable snapshot under a compacted log: its prefix is lost; the member fetches a snapshot"},
	{"B3", yes, yes, anyBool, bootRestore, false, "the snapshot and the log after it: restore, replay the rest (nothing after it: CLEAN and behind)"},
	{"B4", yes, no, anyBool, bootRestoreReset, true, "a snapshot the log does not reach (damage cut it, or a newer snapshot was lost): restore it, the log restarts after it"},
	{"A1", no, yes, anyBool, bootAssert, false, "the WAL cannot hold the last entry of no snapshot"},
}

var (
	no      = []bool{false}
	yes     = []bool{true}
	anyBool = []bool{false, true}
)

func (c *bootCase) matches(have, held, compacted bool) bool {
	in := func(vs []bool, v bool) bool {
		for _, x := range vs {
			if x == v {
				return true
			}
		}
		return false
	}
	return in(c.have, have) && in(c.held, held) && in(c.compacted, compacted)
}

func decideBoot(have, held, compacted bool) *bootCase {
	for k := range bootCases {
		if bootCases[k].matches(have, held, compacted) {
			return &bootCases[k]
		}
	}
	panic(fmt.Sprintf("replica: no boot case for %v %v %v", have, held, compacted))
}

// snapBoot is what the boot with snapshots hands the core.
type snapBoot struct {
	row       *bootCase
	info      raft.SnapshotInfo
	prefix    []trace.Entry
	truncated bool
	meta      SnapshotMeta
	name      string
}

// walHolds reports whether the WAL holds the snapshot's last entry: its
// index within the log (or at its compaction base) with its term and chain
// value.
func walHolds(w *wal.WAL, m *SnapshotMeta) bool {
	if m.Index+1 < w.FirstIndex() || m.Index > w.LastIndex() {
		return false
	}
	t, err1 := w.Term(m.Index)
	c, err2 := w.Checksum(m.Index)
	return err1 == nil && err2 == nil && t == m.Term && c == m.Chain
}

// bootSnapshots finds the snapshot to restart from, carries out its row
// (resetting the WAL where the row says so, synchronously: the boot waits
// for it) and restores the state machine.
func (r *Replica) bootSnapshots(ctx context.Context) (snapBoot, error) {
	s := r.snaps
	var b snapBoot
	if err := s.store.fs.MkdirAll(s.store.dir); err != nil {
		return b, fmt.Errorf("replica: snapshots: %w", err)
	}
	files, err := s.store.list()
	if err != nil {
		return b, err
	}
	var drop []string
	var have bool
	for _, f := range files {
		switch {
		case f.kind == snapKindPart || f.kind == snapKindTmp:
			drop = append(drop, f.name) // a transfer or a snapshot a crash interrupted
			continue
		case have:
			drop = append(drop, f.name) // older than the one chosen
			continue
		}
		meta, err := s.store.verify(f.name)
		if err != nil {
			if !errors.Is(err, ErrSnapshotCorrupt) {
				return b, err
			}
			s.stats.Quarantined++
			r.log.Error("replica: SNAPSHOT FILE FAILED VERIFICATION at boot: quarantined, never read", "file", f.name, "err", err)
			if err := s.store.quarantine(f.name); err != nil {
				return b, err
			}
			continue
		}
		if meta.Index != f.index || meta.Term != f.term {
			s.stats.Quarantined++
			r.log.Error("replica: snapshot file holds another snapshot than its name says: quarantined", "file", f.name, "holds", meta.info())
			if err := s.store.quarantine(f.name); err != nil {
				return b, err
			}
			continue
		}
		if f.kind == snapKindRecv && !walHolds(r.w, &meta) {
			drop = append(drop, f.name) // received, never installed
			continue
		}
		have, b.meta, b.name = true, meta, f.name
	}
	if err := s.store.remove(drop...); err != nil {
		return b, fmt.Errorf("replica: removing stale snapshot files: %w", err)
	}
	b.row = decideBoot(have, have && walHolds(r.w, &b.meta), r.w.FirstIndex() > 1)
	b.truncated = b.row.truncated
	if b.truncated {
		if err := r.markTruncatedBoot(); err != nil {
			return b, err
		}
	}
	if err := r.carryOutBoot(ctx, &b); err != nil {
		return b, err
	}
	r.log.Info("replica: boot with snapshots", "row", b.row.row, "why", b.row.why, "snapshot", b.name,
		"index", b.info.Index, "term", b.info.Term, "first_index", r.w.FirstIndex(), "last_index", r.w.LastIndex())
	return b, nil
}

// markTruncatedBoot writes the TRUNCATED mark (TruncatedAtTerm: the current
// term, at least 1, as raft.NewNode sets it) durably before a truncating
// row's reset cuts the log, as wal.Open does for its own cuts: were the
// reset durable first, a crash before the core's first Ready was persisted
// would boot the reset log CLEAN (B1), and the member would vote on a log
// that lost entries it may have acknowledged (the boot window, spec -bug
// mark-after-cut). A member whose hard state is lost runs passive: no mark.
func (r *Replica) markTruncatedBoot() error {
	if r.w.HardStateLost() {
		return nil
	}
	hs := r.w.HardState()
	if hs.TruncatedAtTerm == max(hs.Term, 1) && !hs.Ambiguous {
		return nil
	}
	hs.TruncatedAtTerm, hs.Ambiguous = max(hs.Term, 1), false // TRUNCATED replaces an AMBIGUOUS mark
	if err := r.w.SetHardState(hs); err != nil {
		return fmt.Errorf("replica: boot: write the TRUNCATED mark: %w", err)
	}
	return nil
}

// carryOutBoot performs a row's action.
func (r *Replica) carryOutBoot(ctx context.Context, b *snapBoot) error {
	s := r.snaps
	switch b.row.action {
	case bootReplay:
		return nil
	case bootResetEmpty:
		r.log.Error("replica: the log is compacted and no snapshot is usable: its prefix is LOST; resetting the log, TRUNCATED, fetching a snapshot from the leader",
			"first_index", r.w.FirstIndex())
		return r.resetWAL(ctx, 0, 0, 0)
	case bootRestoreReset:
		r.log.Error("replica: the log does not reach the newest usable snapshot: restarting the log after it, TRUNCATED",
			"snapshot", b.name, "index", b.meta.Index, "first_index", r.w.FirstIndex(), "last_index", r.w.LastIndex())
		if err := r.resetWAL(ctx, b.meta.Index, b.meta.Term, b.meta.Chain); err != nil {
			return err
		}
	case bootAssert:
		panic("replica: boot case " + b.row.row + ": " + b.row.why)
	}
	_, err := s.store.restore(b.name, func(rd io.Reader, m SnapshotMeta) error { return s.sm.Restore(rd, m.Index, m.Term) })
	if err != nil {
		return fmt.Errorf("replica: restoring the state machine from %s (verified just before): %w", b.name, err)
	}
	b.info, b.prefix = b.meta.info(), b.meta.TracePrefix
	s.cur, s.curName = b.meta, b.name
	return nil
}

// resetWAL restarts the log after (index, term, chain) and waits until the
// reset is durable.
func (r *Replica) resetWAL(ctx context.Context, index, term uint64, chain uint32) error {
	if index == 0 {
		chain = wal.ChainSeed(0, 0)
	}
	if err := r.w.ResetChain(index, term, chain); err != nil {
		return fmt.Errorf("replica: boot: reset the WAL at %d: %w", index, err)
	}
	if err := r.w.Sync(ctx); err != nil {
		return fmt.Errorf("replica: boot: reset the WAL at %d: %w", index, err)
	}
	return nil
}
