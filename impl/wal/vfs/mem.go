package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path"
	"sort"
	"sync"
	"syscall"
)

// MemConfig sets the random faults of a MemFS. Rates are probabilities per operation;
// zero rates leave only the explicit, deterministic faults (the Fail*, Flip*, Misdirect*
// and CrashAtOp methods) and the crash model itself.
type MemConfig struct {
	// Seed drives every random choice: crash outcomes and random faults.
	Seed uint64
	// SectorBytes is the disk's atomic write unit, the grain of torn writes. Default 512.
	SectorBytes int
	// CapacityBytes bounds the total size of all files; beyond it writes, truncates and
	// preallocations fail with ENOSPC. Zero means unlimited.
	CapacityBytes int64
	// ReadFlipRate is the chance that a read returns one bit flipped (the stored bytes
	// stay intact, so a re-read may succeed).
	ReadFlipRate float64
	// SyncFailRate is the chance that a Sync fails with EIO.
	SyncFailRate float64
	// MisdirectRate is the chance that a write lands at another sector-aligned offset of
	// the same file, leaving the intended range as it was.
	MisdirectRate float64
}

// MemFS is an in-memory disk that models a page cache in front of stable storage and
// fails the way disks do. It is safe for concurrent use.
//
// Every file has two images: the page cache (what reads return) and stable storage
// (what survives a crash). Writes go to the page cache and are queued as dirty; a Sync
// applies the file's dirty writes, in order, to stable storage. Names live in a
// volatile namespace and reach the stable namespace at SyncDir of their directory.
//
// Faults:
//   - Crash: every dirty write is, by the seed, lost whole, kept whole, kept in part
//     (an arbitrary subset of its sectors), or kept in part with one sector torn (a
//     prefix of the sector's new bytes over its old bytes). Each directory's namespace
//     either keeps its unsynced changes or reverts to its last SyncDir, as a whole.
//     Every operation then fails with ErrCrashed (the process using the disk is dead)
//     until Restart; handles opened before the crash stay dead after it.
//   - Sync failure (EIO): the file's dirty writes are resolved as at a crash and then
//     marked clean, so a later successful Sync does not write them; reads keep showing
//     them (Linux keeps the failed pages in the cache). Nothing written since the last
//     good Sync may be assumed on disk.
//   - Bit flips at rest (FlipBit) and on read (FlipBitOnRead, ReadFlipRate).
//   - Misdirected writes (MisdirectWrite, MisdirectRate).
//   - Disk full (CapacityBytes, SetCapacity) and injected write errors (FailWrite).
//   - A crash at the n-th mutating operation (CrashAtOp), for exhaustive crash points.
type MemFS struct {
	mu  sync.Mutex
	cfg MemConfig
	rng *rand.Rand

	// life counts crashes; a handle works only in the life it was opened in.
	life uint64
	// down: the disk crashed and the process using it is dead; every operation fails
	// with ErrCrashed until Restart.
	down bool
	// inodeIDNext numbers inodes, for messages.
	inodeIDNext uint64
	// names is the namespace that Open and List see now.
	names map[string]*inode
	// namesDurable is the namespace on stable storage. Invariant: it differs from names
	// only in directories changed since their last SyncDir.
	namesDurable map[string]*inode
	dirs         map[string]bool

	// opCount counts mutating operations; when it reaches crashAtOp (non-zero) the disk
	// crashes instead of performing that operation.
	opCount   uint64
	crashAtOp uint64

	faults []memFault
	events []string

	// locks holds the Lock holders by name; a holder from an earlier life (before a
	// crash) no longer holds anything.
	locks map[string]*memLock
}

type inode struct {
	id uint64
	// data is the page cache: what reads return.
	data []byte
	// stable is stable storage: what a crash leaves.
	stable []byte
	// dirty holds the writes and resizes since the last Sync, in order.
	dirty []memWrite
}

type memWrite struct {
	off    int64
	data   []byte
	resize bool
	size   int64
}

type faultKind uint8

const (
	faultSync faultKind = iota + 1
	faultWrite
	faultMisdirect
	faultReadFlip
)

type memFault struct {
	kind  faultKind
	ino   *inode
	err   error
	delta int64
	off   int64
	bit   uint
	count int
}

// NewMemFS returns an empty in-memory disk.
func NewMemFS(cfg MemConfig) *MemFS {
	if cfg.SectorBytes <= 0 {
		cfg.SectorBytes = 512
	}
	return &MemFS{
		cfg:          cfg,
		rng:          rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		names:        map[string]*inode{},
		namesDurable: map[string]*inode{},
		dirs:         map[string]bool{".": true, "/": true},
	}
}

var _ FS = (*MemFS)(nil)

func clean(name string) string { return path.Clean(name) }

func (m *MemFS) eventf(format string, args ...any) {
	const eventsMax = 256
	if len(m.events) >= eventsMax {
		m.events = m.events[1:]
	}
	m.events = append(m.events, fmt.Sprintf(format, args...))
}

// Events returns a description of the recent faults and crashes, for test messages.
func (m *MemFS) Events() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.events...)
}

// step counts a mutating operation and crashes the disk if this is the scheduled one.
// Called with m.mu held.
func (m *MemFS) step(op, name string) error {
	if m.down {
		return &fs.PathError{Op: op, Path: name, Err: ErrCrashed}
	}
	m.opCount++
	if m.crashAtOp != 0 && m.opCount == m.crashAtOp {
		m.eventf("crash at op %d (%s %s)", m.opCount, op, name)
		m.crashLocked()
		return &fs.PathError{Op: op, Path: name, Err: ErrCrashed}
	}
	return nil
}

// Ops returns the number of mutating operations so far.
func (m *MemFS) Ops() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.opCount
}

// CrashAtOp schedules a crash at the n-th mutating operation counted from the disk's
// creation (see Ops): that operation does not happen, it returns ErrCrashed, and the
// disk is left as Crash leaves it. Zero cancels.
func (m *MemFS) CrashAtOp(n uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashAtOp = n
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("create", name); err != nil {
		return nil, err
	}
	if !m.dirs[path.Dir(name)] {
		return nil, &fs.PathError{Op: "create", Path: name, Err: fs.ErrNotExist}
	}
	ino := m.names[name]
	if ino == nil {
		m.inodeIDNext++
		ino = &inode{id: m.inodeIDNext}
		m.names[name] = ino
	} else {
		ino.data = ino.data[:0]
		ino.dirty = append(ino.dirty, memWrite{resize: true, size: 0})
	}
	return &memFile{fs: m, ino: ino, name: name, life: m.life}, nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrCrashed}
	}
	ino := m.names[name]
	if ino == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{fs: m, ino: ino, name: name, life: m.life}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("remove", name); err != nil {
		return err
	}
	if m.names[name] == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(m.names, name)
	return nil
}

// Rename implements FS.
func (m *MemFS) Rename(oldName, newName string) error {
	oldName, newName = clean(oldName), clean(newName)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("rename", oldName); err != nil {
		return err
	}
	ino := m.names[oldName]
	if ino == nil {
		return &fs.PathError{Op: "rename", Path: oldName, Err: fs.ErrNotExist}
	}
	if !m.dirs[path.Dir(newName)] {
		return &fs.PathError{Op: "rename", Path: newName, Err: fs.ErrNotExist}
	}
	delete(m.names, oldName)
	m.names[newName] = ino
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, &fs.PathError{Op: "list", Path: dir, Err: ErrCrashed}
	}
	if !m.dirs[dir] {
		return nil, &fs.PathError{Op: "list", Path: dir, Err: fs.ErrNotExist}
	}
	var out []string
	for name := range m.names {
		if path.Dir(name) == dir {
			out = append(out, path.Base(name))
		}
	}
	sort.Strings(out)
	return out, nil
}

// SyncDir implements FS.
func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("syncdir", dir); err != nil {
		return err
	}
	if !m.dirs[dir] {
		return &fs.PathError{Op: "syncdir", Path: dir, Err: fs.ErrNotExist}
	}
	for name := range m.namesDurable {
		if path.Dir(name) == dir {
			delete(m.namesDurable, name)
		}
	}
	for name, ino := range m.names {
		if path.Dir(name) == dir {
			m.namesDurable[name] = ino
		}
	}
	return nil
}

// MkdirAll implements FS. Directories are durable at once.
func (m *MemFS) MkdirAll(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: ErrCrashed}
	}
	for d := dir; !m.dirs[d]; d = path.Dir(d) {
		m.dirs[d] = true
	}
	return nil
}

// usedLocked returns the bytes held by the files of the current namespace.
func (m *MemFS) usedLocked() int64 {
	var used int64
	seen := map[*inode]bool{}
	for _, ino := range m.names {
		if !seen[ino] {
			seen[ino] = true
			used += int64(len(ino.data))
		}
	}
	return used
}

// growLocked checks that ino may grow to size bytes.
func (m *MemFS) growLocked(ino *inode, size int64, op, name string) error {
	grow := size - int64(len(ino.data))
	if grow <= 0 || m.cfg.CapacityBytes == 0 {
		return nil
	}
	if m.usedLocked()+grow > m.cfg.CapacityBytes {
		m.eventf("ENOSPC %s %s size %d", op, name, size)
		return &fs.PathError{Op: op, Path: name, Err: syscall.ENOSPC}
	}
	return nil
}

// SetCapacity changes CapacityBytes; zero means unlimited.
func (m *MemFS) SetCapacity(bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.CapacityBytes = bytes
}

// takeFault removes and returns the first injected fault of kind for ino.
func (m *MemFS) takeFault(kind faultKind, ino *inode) (memFault, bool) {
	for i, f := range m.faults {
		if f.kind == kind && f.ino == ino {
			m.faults = append(m.faults[:i], m.faults[i+1:]...)
			return f, true
		}
	}
	return memFault{}, false
}

// inject adds a fault aimed at the file now named name; it stays with that file
// through renames.
func (m *MemFS) inject(f memFault, name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	f.ino = m.names[name]
	if f.ino == nil {
		return &fs.PathError{Op: "inject", Path: name, Err: fs.ErrNotExist}
	}
	m.faults = append(m.faults, f)
	return nil
}

// Down reports whether the disk crashed and has not restarted.
func (m *MemFS) Down() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.down
}

// ClearFaults removes every injected fault not yet taken (Fail*, Misdirect*,
// FlipBitOnRead) and cancels a scheduled CrashAtOp. Random faults (the
// MemConfig rates) and bits already flipped at rest stay.
func (m *MemFS) ClearFaults() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults = nil
	m.crashAtOp = 0
}

// FailSync makes the next Sync of the file fail with EIO, with the consequences
// described on MemFS.
func (m *MemFS) FailSync(name string) error {
	return m.inject(memFault{kind: faultSync}, name)
}

// FailWrite makes the next WriteAt on the file fail with err, writing nothing.
func (m *MemFS) FailWrite(name string, err error) error {
	return m.inject(memFault{kind: faultWrite, err: err}, name)
}

// MisdirectWrite makes the next WriteAt on the file land delta bytes away from where it
// was aimed (clamped at offset zero); the aimed range keeps its old bytes.
func (m *MemFS) MisdirectWrite(name string, delta int64) error {
	return m.inject(memFault{kind: faultMisdirect, delta: delta}, name)
}

// FlipBitOnRead makes the next count reads of the file that cover byte off return that
// byte with bit flipped; the stored byte is intact.
func (m *MemFS) FlipBitOnRead(name string, off int64, bit uint, count int) error {
	return m.inject(memFault{kind: faultReadFlip, off: off, bit: bit % 8, count: count}, name)
}

// FlipBit flips a bit at rest: in stable storage and in the page cache.
func (m *MemFS) FlipBit(name string, off int64, bit uint) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	ino := m.names[name]
	if ino == nil {
		return &fs.PathError{Op: "flipbit", Path: name, Err: fs.ErrNotExist}
	}
	if off < 0 || off >= int64(len(ino.data)) {
		return fmt.Errorf("vfs: flipbit %s: offset %d beyond size %d", name, off, len(ino.data))
	}
	ino.data[off] ^= 1 << (bit % 8)
	if off < int64(len(ino.stable)) {
		ino.stable[off] ^= 1 << (bit % 8)
	}
	m.eventf("flip at rest %s offset %d bit %d", name, off, bit%8)
	return nil
}

// ReadFile returns the page-cache image of name.
func (m *MemFS) ReadFile(name string) ([]byte, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	ino := m.names[name]
	if ino == nil {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrNotExist}
	}
	return append([]byte(nil), ino.data...), nil
}

// WriteFile creates name with data, durable at once (data and name), for tests that
// lay out a disk by hand.
func (m *MemFS) WriteFile(name string, data []byte) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[path.Dir(name)] {
		return &fs.PathError{Op: "writefile", Path: name, Err: fs.ErrNotExist}
	}
	m.inodeIDNext++
	ino := &inode{id: m.inodeIDNext, data: append([]byte(nil), data...), stable: append([]byte(nil), data...)}
	m.names[name] = ino
	m.namesDurable[name] = ino
	return nil
}

// Crash loses what a power failure may lose (see MemFS). The disk stays down (every
// operation fails with ErrCrashed) until Restart; handles opened before the crash stay
// dead.
func (m *MemFS) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.eventf("crash")
	m.crashLocked()
}

func (m *MemFS) crashLocked() {
	inodes := map[*inode]bool{}
	for _, ino := range m.names {
		inodes[ino] = true
	}
	for _, ino := range m.namesDurable {
		inodes[ino] = true
	}
	// Resolve in a fixed order so that one seed gives one outcome.
	ordered := make([]*inode, 0, len(inodes))
	for ino := range inodes {
		ordered = append(ordered, ino)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].id < ordered[j].id })
	for _, ino := range ordered {
		m.resolveDirtyLocked(ino)
		ino.data = append([]byte(nil), ino.stable...)
	}
	dirs := make([]string, 0, len(m.dirs))
	for d := range m.dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	names := map[string]*inode{}
	for _, d := range dirs {
		keep := m.rng.IntN(2) == 0
		from := m.namesDurable
		if keep {
			from = m.names
		}
		for name, ino := range from {
			if path.Dir(name) == d {
				names[name] = ino
			}
		}
	}
	m.names = names
	m.namesDurable = map[string]*inode{}
	for name, ino := range names {
		m.namesDurable[name] = ino
	}
	m.faults = nil
	m.life++
	m.down = true
}

// Restart brings the disk back after a crash, as a reboot would: what the crash left
// is what the next process sees.
func (m *MemFS) Restart() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = false
}

// resolveDirtyLocked applies each dirty write to stable storage whole, in part, torn or
// not at all, chosen by the seed, and empties the dirty list.
func (m *MemFS) resolveDirtyLocked(ino *inode) {
	sector := int64(m.cfg.SectorBytes)
	for _, w := range ino.dirty {
		if w.resize {
			if m.rng.IntN(2) == 0 {
				ino.stable = resize(ino.stable, w.size)
			}
			continue
		}
		switch r := m.rng.IntN(100); {
		case r < 25: // lost
		case r < 55: // whole
			ino.stable = writeAt(ino.stable, w.data, w.off)
		default: // in part, some sectors; maybe one torn
			torn := r >= 80
			var sectors []int64
			for s := w.off / sector * sector; s < w.off+int64(len(w.data)); s += sector {
				sectors = append(sectors, s)
			}
			tornSector := int64(-1)
			if torn {
				tornSector = sectors[m.rng.IntN(len(sectors))]
			}
			for _, s := range sectors {
				lo, hi := max(s, w.off), min(s+sector, w.off+int64(len(w.data)))
				part := w.data[lo-w.off : hi-w.off]
				switch {
				case s == tornSector:
					part = part[:m.rng.IntN(len(part)+1)]
				case m.rng.IntN(2) == 0:
					continue
				}
				ino.stable = writeAt(ino.stable, part, lo)
			}
		}
	}
	ino.dirty = nil
}

func resize(b []byte, size int64) []byte {
	if size <= int64(len(b)) {
		return b[:size]
	}
	return append(b, make([]byte, size-int64(len(b)))...)
}

func writeAt(b, p []byte, off int64) []byte {
	if end := off + int64(len(p)); end > int64(len(b)) {
		b = resize(b, end)
	}
	copy(b[off:], p)
	return b
}

// memFile is a handle on an inode, valid in the life it was opened in.
type memFile struct {
	fs     *MemFS
	ino    *inode
	name   string
	life   uint64
	closed bool
}

func (f *memFile) check(op string) error {
	if f.fs.down {
		return &fs.PathError{Op: op, Path: f.name, Err: ErrCrashed}
	}
	if f.closed {
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	}
	if f.life != f.fs.life {
		return &fs.PathError{Op: op, Path: f.name, Err: ErrCrashed}
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	m := f.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := f.check("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.data[off:])
	kept := m.faults[:0]
	for _, flt := range m.faults {
		if flt.kind == faultReadFlip && flt.ino == f.ino && flt.off >= off && flt.off < off+int64(n) {
			p[flt.off-off] ^= 1 << flt.bit
			m.eventf("flip on read %s offset %d bit %d", f.name, flt.off, flt.bit)
			flt.count--
			if flt.count <= 0 {
				continue
			}
		}
		kept = append(kept, flt)
	}
	m.faults = kept
	if n > 0 && m.cfg.ReadFlipRate > 0 && m.rng.Float64() < m.cfg.ReadFlipRate {
		i, bit := m.rng.IntN(n), uint(m.rng.IntN(8))
		p[i] ^= 1 << bit
		m.eventf("random flip on read %s offset %d bit %d", f.name, off+int64(i), bit)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	m := f.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := f.check("write"); err != nil {
		return 0, err
	}
	if err := m.step("write", f.name); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrInvalid}
	}
	if flt, ok := m.takeFault(faultWrite, f.ino); ok {
		m.eventf("write error %s offset %d: %v", f.name, off, flt.err)
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: flt.err}
	}
	if err := m.growLocked(f.ino, off+int64(len(p)), "write", f.name); err != nil {
		return 0, err
	}
	aimed := off
	if flt, ok := m.takeFault(faultMisdirect, f.ino); ok {
		off = max(0, off+flt.delta)
	} else if m.cfg.MisdirectRate > 0 && m.rng.Float64() < m.cfg.MisdirectRate {
		sectors := int64(m.rng.IntN(8) - 4)
		if sectors >= 0 {
			sectors++
		}
		off = max(0, off+sectors*int64(m.cfg.SectorBytes))
	}
	if off != aimed {
		m.eventf("misdirected write %s aimed at %d landed at %d (%d bytes)", f.name, aimed, off, len(p))
	}
	data := append([]byte(nil), p...)
	f.ino.data = writeAt(f.ino.data, data, off)
	f.ino.dirty = append(f.ino.dirty, memWrite{off: off, data: data})
	return len(p), nil
}

func (f *memFile) Sync() error {
	m := f.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := f.check("sync"); err != nil {
		return err
	}
	if err := m.step("sync", f.name); err != nil {
		return err
	}
	_, fail := m.takeFault(faultSync, f.ino)
	if !fail && m.cfg.SyncFailRate > 0 && m.rng.Float64() < m.cfg.SyncFailRate {
		fail = true
	}
	if fail {
		m.eventf("EIO on sync %s (%d dirty writes resolved and marked clean)", f.name, len(f.ino.dirty))
		m.resolveDirtyLocked(f.ino)
		return &fs.PathError{Op: "sync", Path: f.name, Err: syscall.EIO}
	}
	for _, w := range f.ino.dirty {
		if w.resize {
			f.ino.stable = resize(f.ino.stable, w.size)
		} else {
			f.ino.stable = writeAt(f.ino.stable, w.data, w.off)
		}
	}
	f.ino.dirty = nil
	return nil
}

func (f *memFile) Truncate(size int64) error {
	m := f.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := f.check("truncate"); err != nil {
		return err
	}
	if err := m.step("truncate", f.name); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrInvalid}
	}
	if err := m.growLocked(f.ino, size, "truncate", f.name); err != nil {
		return err
	}
	f.ino.data = resize(f.ino.data, size)
	f.ino.dirty = append(f.ino.dirty, memWrite{resize: true, size: size})
	return nil
}

func (f *memFile) Preallocate(size int64) error {
	m := f.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := f.check("preallocate"); err != nil {
		return err
	}
	if err := m.step("preallocate", f.name); err != nil {
		return err
	}
	if size <= int64(len(f.ino.data)) {
		return nil
	}
	if err := m.growLocked(f.ino, size, "preallocate", f.name); err != nil {
		return err
	}
	f.ino.data = resize(f.ino.data, size)
	f.ino.dirty = append(f.ino.dirty, memWrite{resize: true, size: size})
	return nil
}

func (f *memFile) Size() (int64, error) {
	m := f.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := f.check("size"); err != nil {
		return 0, err
	}
	return int64(len(f.ino.data)), nil
}

func (f *memFile) Close() error {
	m := f.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}
