package replica

import (
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/durableraft/durableraft/impl/wal/vfs"
)

// The snapshot directory (docs/snapshots.md, "Files"):
//
//	snap-<index>-<term>.snap   a snapshot this node made, or one it
//	                           installed and booted from
//	recv-<index>-<term>.snap   a snapshot received in full, verified and
//	                           durable; it counts only once the WAL holds
//	                           its last entry (the install's reset is on
//	                           disk), otherwise it is removed at boot
//	part-<index>-<term>.tmp    a snapshot being received
//	tmp-<index>-<term>.tmp     a snapshot being written
//	bad-<name>                 a file that failed verification: kept for an
//	                           operator, never read
//
// index and term are 16 hex digits.

// Snapshot file kinds, by prefix.
const (
	snapKindMade = "snap"
	snapKindRecv = "recv"
	snapKindPart = "part"
	snapKindTmp  = "tmp"
	snapKindBad  = "bad"
)

// snapName is the file name of a snapshot of kind at (index, term).
func snapName(kind string, index, term uint64) string {
	ext := ".snap"
	if kind == snapKindPart || kind == snapKindTmp {
		ext = ".tmp"
	}
	return fmt.Sprintf("%s-%016x-%016x%s", kind, index, term, ext)
}

// parseSnapName parses a snapshot file name (not a bad- one).
func parseSnapName(name string) (kind string, index, term uint64, ok bool) {
	base, ext, found := strings.Cut(name, ".")
	if !found || (ext != "snap" && ext != "tmp") {
		return "", 0, 0, false
	}
	parts := strings.Split(base, "-")
	if len(parts) != 3 || len(parts[1]) != 16 || len(parts[2]) != 16 {
		return "", 0, 0, false
	}
	kind = parts[0]
	wantExt := "snap"
	if kind == snapKindPart || kind == snapKindTmp {
		wantExt = "tmp"
	}
	if (kind != snapKindMade && kind != snapKindRecv && kind != snapKindPart && kind != snapKindTmp) || ext != wantExt {
		return "", 0, 0, false
	}
	i, err1 := strconv.ParseUint(parts[1], 16, 64)
	t, err2 := strconv.ParseUint(parts[2], 16, 64)
	if err1 != nil || err2 != nil || snapName(kind, i, t) != name {
		return "", 0, 0, false
	}
	return kind, i, t, true
}

// snapFile is a snapshot file found in the directory.
type snapFile struct {
	name        string
	kind        string
	index, term uint64
}

// snapStore is the snapshot directory on a file system (the WAL's: a
// simulated crash takes both).
type snapStore struct {
	fs  vfs.FS
	dir string
}

func (s snapStore) path(name string) string { return path.Join(s.dir, name) }

// list returns the snapshot files of the directory, newest (highest
// index, then term) first; unknown names are left alone.
func (s snapStore) list() ([]snapFile, error) {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return nil, fmt.Errorf("replica: snapshots: %w", err)
	}
	var out []snapFile
	for _, n := range names {
		if kind, i, t, ok := parseSnapName(n); ok {
			out = append(out, snapFile{name: n, kind: kind, index: i, term: t})
		}
	}
	slices.SortFunc(out, func(a, b snapFile) int {
		if a.index != b.index {
			return cmpU64(b.index, a.index)
		}
		if a.term != b.term {
			return cmpU64(b.term, a.term)
		}
		return strings.Compare(a.name, b.name)
	})
	return out, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// verify opens and reads a whole snapshot file, verifying every part.
func (s snapStore) verify(name string) (SnapshotMeta, error) {
	f, err := s.fs.Open(s.path(name))
	if err != nil {
		return SnapshotMeta{}, err
	}
	defer f.Close()
	meta, err := verifySnap(f)
	if err != nil {
		return meta, fmt.Errorf("%s: %w", name, err)
	}
	return meta, nil
}

// quarantine renames a file that failed verification to bad-<name> (kept
// for an operator, never read).
func (s snapStore) quarantine(name string) error {
	if err := s.fs.Rename(s.path(name), s.path(snapKindBad+"-"+name)); err != nil {
		return err
	}
	return s.fs.SyncDir(s.dir)
}

// remove removes files and syncs the directory once.
func (s snapStore) remove(names ...string) error {
	if len(names) == 0 {
		return nil
	}
	var first error
	for _, n := range names {
		if err := s.fs.Remove(s.path(n)); err != nil && !errors.Is(err, vfs.ErrNotExist) && first == nil {
			first = err
		}
	}
	if err := s.fs.SyncDir(s.dir); err != nil && first == nil {
		first = err
	}
	return first
}

// restore streams the body of the snapshot file name into restore, every
// block verified before it is handed on (the state machine sees no byte
// of a damaged block, and an error before the end).
func (s snapStore) restore(name string, restore func(io.Reader, SnapshotMeta) error) (SnapshotMeta, error) {
	f, err := s.fs.Open(s.path(name))
	if err != nil {
		return SnapshotMeta{}, err
	}
	defer f.Close()
	meta, l, err := openSnap(f)
	if err != nil {
		return meta, fmt.Errorf("%s: %w", name, err)
	}
	hdrSum, err := headerSum(f)
	if err != nil {
		return meta, err
	}
	r := newSnapReader(f, l, hdrSum)
	if err := restore(r, meta); err != nil {
		return meta, fmt.Errorf("%s: %w", name, err)
	}
	// The state machine may stop before the end: the trailer must verify too.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return meta, fmt.Errorf("%s: %w", name, err)
	}
	return meta, nil
}
