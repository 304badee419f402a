package spec

import "sync"

// fpSet is the explorer's set of visited fingerprints, each with the
// fingerprint of the state it was first reached from (0 for an initial
// state), from which counterexamples are rebuilt. It is sharded so that
// workers rarely contend; each shard is an open-addressing table.
type fpSet struct {
	shards [fpShards]fpShard
}

const fpShards = 256

type fpShard struct {
	mu      sync.Mutex
	keys    []uint64 // 0 marks an empty slot; fingerprint 0 is stored as 1
	parents []uint64
	n       int
}

func normalizeFP(fp uint64) uint64 {
	if fp == 0 {
		return 1
	}
	return fp
}

// insert adds fp with its parent and reports whether it was new.
func (f *fpSet) insert(fp, parent uint64) bool {
	fp = normalizeFP(fp)
	sh := &f.shards[fp%fpShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.n*4 >= len(sh.keys)*3 {
		sh.grow()
	}
	mask := uint64(len(sh.keys) - 1)
	for k := (fp / fpShards) & mask; ; k = (k + 1) & mask {
		switch sh.keys[k] {
		case fp:
			return false
		case 0:
			sh.keys[k] = fp
			sh.parents[k] = parent
			sh.n++
			return true
		}
	}
}

// parent returns the parent recorded for fp.
func (f *fpSet) parent(fp uint64) (uint64, bool) {
	fp = normalizeFP(fp)
	sh := &f.shards[fp%fpShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.keys) == 0 {
		return 0, false
	}
	mask := uint64(len(sh.keys) - 1)
	for k := (fp / fpShards) & mask; ; k = (k + 1) & mask {
		switch sh.keys[k] {
		case fp:
			return sh.parents[k], true
		case 0:
			return 0, false
		}
	}
}

func (sh *fpShard) grow() {
	size := 2 * len(sh.keys)
	if size == 0 {
		size = 1024
	}
	keys, parents := sh.keys, sh.parents
	sh.keys = make([]uint64, size)
	sh.parents = make([]uint64, size)
	mask := uint64(size - 1)
	for idx, fp := range keys {
		if fp == 0 {
			continue
		}
		k := (fp / fpShards) & mask
		for sh.keys[k] != 0 {
			k = (k + 1) & mask
		}
		sh.keys[k] = fp
		sh.parents[k] = parents[idx]
	}
}

func (f *fpSet) len() int {
	n := 0
	for k := range f.shards {
		f.shards[k].mu.Lock()
		n += f.shards[k].n
		f.shards[k].mu.Unlock()
	}
	return n
}
