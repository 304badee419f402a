package wal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// HardState is the protocol state that must be durable before any message that depends
// on it. The WAL stores it opaquely apart from the log, in its own file, so that damage
// to log segments cannot take it along. TruncatedAtTerm is the protocol core's sticky
// repair marker (the term in which recovery found a TRUNCATED log); the WAL only keeps it.
// Ambiguous says that mark is an AMBIGUOUS one (a damaged last batch, Verdict
// [Ambiguous]): Open sets both when its log verdict is AMBIGUOUS, the core clears both
// when it repairs the member. Ambiguous without TruncatedAtTerm is refused.
type HardState struct {
	Term            uint64
	Vote            uint64
	Commit          uint64
	TruncatedAtTerm uint64
	Ambiguous       bool
}

// Hard-state file: two copies ("slots") at offsets 0 and 4096, so that one physical
// sector never holds both. An update writes slot A, fdatasyncs, writes slot B,
// fdatasyncs; SetHardState returns after the second. At any instant at least one slot
// holds the last acknowledged state, so a torn write or a bit flip in one slot loses
// nothing; only both slots failing loses the state.
//
//	offset size field
//	0      4    checksum         CRC-32C of bytes [4, 64)
//	4      4    magic            "DRHS"
//	8      8    sequence         increases by one per update
//	16     8    term
//	24     8    vote
//	32     8    commit
//	40     8    truncatedAtTerm
//	48     4    flags            bit 0: lost (see H8); bit 1: ambiguous; other bits zero
//	52     12   reserved         zero
const (
	hardStateName      = "hardstate"
	hardStateSlotBytes = 64
	hardStateSlotB     = 4096
	hardStateFileBytes = 8192
	magicHardState     = 0x53485244 // "DRHS" little endian
)

type hardStateSlot struct {
	sequence uint64
	state    HardState
	// lost: an earlier Open found the hard state lost or damaged (a TRUNCATED row).
	// Carried by every later write until ClearHardStateLoss, so that a restart never
	// turns a lost term or vote into a CLEAN one.
	lost bool
}

const (
	hardStateFlagLost      = 1
	hardStateFlagAmbiguous = 2 // HardState.Ambiguous
)

func (s hardStateSlot) encode() []byte {
	b := make([]byte, hardStateSlotBytes)
	le.PutUint32(b[4:], magicHardState)
	le.PutUint64(b[8:], s.sequence)
	le.PutUint64(b[16:], s.state.Term)
	le.PutUint64(b[24:], s.state.Vote)
	le.PutUint64(b[32:], s.state.Commit)
	le.PutUint64(b[40:], s.state.TruncatedAtTerm)
	var flags uint32
	if s.lost {
		flags |= hardStateFlagLost
	}
	if s.state.Ambiguous {
		flags |= hardStateFlagAmbiguous
	}
	le.PutUint32(b[48:], flags)
	le.PutUint32(b[0:], checksum(b[4:]))
	return b
}

func decodeHardStateSlot(b []byte) (hardStateSlot, bool) {
	if len(b) < hardStateSlotBytes {
		return hardStateSlot{}, false
	}
	b = b[:hardStateSlotBytes]
	flags := le.Uint32(b[48:])
	if le.Uint32(b[0:]) != checksum(b[4:]) || le.Uint32(b[4:]) != magicHardState || flags&^(hardStateFlagLost|hardStateFlagAmbiguous) != 0 ||
		(flags&hardStateFlagAmbiguous != 0 && le.Uint64(b[40:]) == 0) ||
		!isZero(b[52:]) || le.Uint64(b[8:]) == 0 {
		return hardStateSlot{}, false
	}
	return hardStateSlot{
		sequence: le.Uint64(b[8:]),
		state: HardState{
			Term:            le.Uint64(b[16:]),
			Vote:            le.Uint64(b[24:]),
			Commit:          le.Uint64(b[32:]),
			TruncatedAtTerm: le.Uint64(b[40:]),
			Ambiguous:       flags&hardStateFlagAmbiguous != 0,
		},
		lost: flags&hardStateFlagLost != 0,
	}, true
}

// hardStateCase is one row of the hard-state decision table (docs/wal.md).
type hardStateCase struct {
	label   string
	verdict Verdict
	why     string
}

var hardStateCases = map[string]hardStateCase{
	"H1": {"H1", Clean, "no hard-state file and no segment: first boot"},
	"H2": {"H2", Truncated, "no hard-state file but segments exist: it is created before the first segment, so it was lost"},
	"H3": {"H3", Clean, "both copies verify and agree"},
	"H4": {"H4", TornTail, "copy A is one update ahead of copy B: a crash between the two writes; A was fdatasync'd"},
	"H5": {"H5", TornTail, "one copy fails verification (torn while written, or damaged); the other holds the last acknowledged state"},
	"H6": {"H6", Truncated, "both copies verify but disagree in a way the write order cannot produce"},
	"H7": {"H7", Truncated, "neither copy verifies: term and vote are unknown"},
	"H8": {"H8", Truncated, "an earlier open found the hard state lost or damaged (H2, H6 or H7): it stays TRUNCATED until an operator calls ClearHardStateLoss"},
}

// decideHardState picks the state from the two slots (ok says which verified); a
// chosen state carrying the lost flag is H8 unless its own row is TRUNCATED already.
func decideHardState(a, b hardStateSlot, okA, okB bool) (hardStateSlot, hardStateCase) {
	chosen, c := decideHardStateSlots(a, b, okA, okB)
	if chosen.lost && c.verdict != Truncated {
		return chosen, hardStateCases["H8"]
	}
	return chosen, c
}

func decideHardStateSlots(a, b hardStateSlot, okA, okB bool) (hardStateSlot, hardStateCase) {
	switch {
	case okA && okB && a == b:
		return a, hardStateCases["H3"]
	case okA && okB && a.sequence == b.sequence+1:
		return a, hardStateCases["H4"]
	case okA && okB:
		if b.sequence > a.sequence {
			return b, hardStateCases["H6"]
		}
		return a, hardStateCases["H6"]
	case okA:
		return a, hardStateCases["H5"]
	case okB:
		return b, hardStateCases["H5"]
	}
	return hardStateSlot{}, hardStateCases["H7"]
}

// hardStateFile is the open hard-state file. Guarded by WAL.ioMu.
type hardStateFile struct {
	fsys vfs.FS
	dir  string
	file vfs.File
	// last is the last state written to both slots, or recovered. Invariant: on disk
	// in at least one slot once the slot A write of it was fdatasync'd.
	last hardStateSlot
	// dirty: a slot was written since the last fdatasync. Invariant: a slot is written
	// only when the file is clean, so at every instant one slot holds the last
	// acknowledged state (a torn write can only reach the slot being written).
	dirty bool
}

// readSlot reads one slot, re-reading up to retries times while it fails to verify.
func readSlot(f vfs.File, off int64, retries int) (hardStateSlot, bool, error) {
	buf := make([]byte, hardStateSlotBytes)
	for attempt := 0; ; attempt++ {
		n, err := f.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return hardStateSlot{}, false, err
		}
		if s, ok := decodeHardStateSlot(buf[:n]); ok || attempt >= retries {
			return s, ok, nil
		}
	}
}

// openHardState recovers the hard state; segmentsExist tells H1 from H2. A recovered
// state that is not CLEAN is rewritten to both slots before returning, and a TRUNCATED
// one with the lost flag set, so that every later open says H8.
func openHardState(fsys vfs.FS, dir string, segmentsExist bool, retries int) (*hardStateFile, hardStateCase, error) {
	h := &hardStateFile{fsys: fsys, dir: dir}
	name := filepath.Join(dir, hardStateName)
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		if err := h.create(); err != nil {
			return nil, hardStateCase{}, err
		}
		if !segmentsExist {
			return h, hardStateCases["H1"], nil
		}
		return h, hardStateCases["H2"], h.store(h.last.state, true)
	}
	if err != nil {
		return nil, hardStateCase{}, fmt.Errorf("wal: open hard state: %w", err)
	}
	h.file = f
	a, okA, err := readSlot(f, 0, retries)
	if err != nil {
		return nil, hardStateCase{}, fmt.Errorf("wal: read hard state: %w", err)
	}
	b, okB, err := readSlot(f, hardStateSlotB, retries)
	if err != nil {
		return nil, hardStateCase{}, fmt.Errorf("wal: read hard state: %w", err)
	}
	chosen, c := decideHardState(a, b, okA, okB)
	h.last = chosen
	if c.verdict == Truncated {
		h.last.lost = true
	}
	if c.verdict != Clean && !(c.label == "H8" && okA && okB && a == b) {
		if err := h.store(chosen.state, h.last.lost); err != nil {
			return nil, hardStateCase{}, err
		}
	}
	return h, c, nil
}

// create makes the file durable with both slots holding the zero state: written under
// a temporary name, fdatasync'd, renamed, and the directory synced.
func (h *hardStateFile) create() error {
	tmp := filepath.Join(h.dir, hardStateName+".tmp")
	f, err := h.fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("wal: create hard state: %w", err)
	}
	h.last = hardStateSlot{sequence: 1}
	slot := h.last.encode()
	buf := make([]byte, hardStateFileBytes)
	copy(buf, slot)
	copy(buf[hardStateSlotB:], slot)
	if _, err := f.WriteAt(buf, 0); err != nil {
		return fmt.Errorf("wal: create hard state: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("wal: create hard state: %w", err)
	}
	if err := h.fsys.Rename(tmp, filepath.Join(h.dir, hardStateName)); err != nil {
		return fmt.Errorf("wal: create hard state: %w", err)
	}
	if err := h.fsys.SyncDir(h.dir); err != nil {
		return fmt.Errorf("wal: create hard state: %w", err)
	}
	h.file = f
	return nil
}

// store writes s with the loss mark lost to slot A, fdatasyncs, then slot B,
// fdatasyncs (Open's repair; the pipeline does the same in steps: opHardState).
func (h *hardStateFile) store(s HardState, lost bool) error {
	next := h.next(s, lost)
	for _, off := range []int64{0, hardStateSlotB} {
		if err := h.writeSlot(next, off); err != nil {
			return err
		}
		if err := h.sync(); err != nil {
			return err
		}
	}
	h.last = next
	return nil
}

// next is the slot that stores s after the last one.
func (h *hardStateFile) next(s HardState, lost bool) hardStateSlot {
	return hardStateSlot{sequence: h.last.sequence + 1, state: s, lost: lost}
}

// writeSlot writes slot s at off (0: slot A, hardStateSlotB: slot B). The file must be
// clean: see dirty.
func (h *hardStateFile) writeSlot(s hardStateSlot, off int64) error {
	assert(!h.dirty, "hard-state slot at %d written while the other slot is not synced", off)
	h.dirty = true
	if _, err := h.file.WriteAt(s.encode(), off); err != nil {
		return fmt.Errorf("wal: write hard state at %d: %w", off, err)
	}
	return nil
}

// sync fdatasyncs the file if a slot was written since the last fdatasync.
func (h *hardStateFile) sync() error {
	if !h.dirty {
		return nil
	}
	if err := h.file.Sync(); err != nil {
		return fmt.Errorf("wal: fdatasync hard state: %w", err)
	}
	h.dirty = false
	return nil
}

// validateHardState refuses a term going backwards and a vote changed within a term
// (both would let this node vote twice), and an ambiguous mark without its term.
func validateHardState(prev, next HardState) error {
	if next.Ambiguous && next.TruncatedAtTerm == 0 {
		return fmt.Errorf("%w: hard state marked ambiguous without a mark term (TruncatedAtTerm)", ErrInvalid)
	}
	if next.Term < prev.Term {
		return fmt.Errorf("%w: hard state term %d below current term %d", ErrInvalid, next.Term, prev.Term)
	}
	if next.Term == prev.Term && prev.Vote != 0 && next.Vote != prev.Vote {
		return fmt.Errorf("%w: vote changed from %d to %d within term %d", ErrInvalid, prev.Vote, next.Vote, next.Term)
	}
	return nil
}
