package vfs

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sort"
)

// Digest returns a SHA-256 digest of the whole disk image: both namespaces (the one
// Open sees and the durable one), and for every file its page cache, its stable
// storage and its unsynced writes in order. Two disks with the same digest behave the
// same from here on, crashes included (given the same seed), so a deterministic
// simulation can compare runs by it.
func (m *MemFS) Digest() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := sha256.New()
	u64 := func(v uint64) { _ = binary.Write(h, binary.LittleEndian, v) }
	bytes := func(b []byte) { u64(uint64(len(b))); h.Write(b) }
	inodes := map[*inode]bool{}
	for _, ns := range []map[string]*inode{m.names, m.namesDurable} {
		names := make([]string, 0, len(ns))
		for name := range ns {
			names = append(names, name)
		}
		sort.Strings(names)
		u64(uint64(len(names)))
		for _, name := range names {
			bytes([]byte(name))
			u64(ns[name].id)
			inodes[ns[name]] = true
		}
	}
	ordered := make([]*inode, 0, len(inodes))
	for ino := range inodes {
		ordered = append(ordered, ino)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].id < ordered[j].id })
	for _, ino := range ordered {
		u64(ino.id)
		bytes(ino.data)
		bytes(ino.stable)
		u64(uint64(len(ino.dirty)))
		for _, w := range ino.dirty {
			u64(uint64(w.off))
			bytes(w.data)
			if w.resize {
				u64(1 + uint64(w.size))
			} else {
				u64(0)
			}
		}
	}
	u64(m.opCount)
	return hex.EncodeToString(h.Sum(nil))
}
