package spec

import (
	"encoding/binary"
	"sync"
)

// The BFS queue keeps encoded states in large pointer-free byte blocks,
// each a run of (uvarint length, encoding) records, so that millions of
// queued states cost their bytes and nothing else: no string headers, and
// nothing for the garbage collector to scan.

const blockBytes = 1 << 20

// levelQueue is one BFS level: blocks appended by the workers that produced
// the level, consumed block by block by the workers that expand it.
type levelQueue struct {
	mu     sync.Mutex
	blocks [][]byte
	states int64
}

func (q *levelQueue) push(block []byte, states int64) {
	if len(block) == 0 {
		return
	}
	q.mu.Lock()
	q.blocks = append(q.blocks, block)
	q.states += states
	q.mu.Unlock()
}

// blockWriter fills blocks for one worker.
type blockWriter struct {
	q      *levelQueue
	cur    []byte
	states int64
}

func (w *blockWriter) add(enc []byte) {
	if len(w.cur)+len(enc)+binary.MaxVarintLen32 > blockBytes && len(w.cur) > 0 {
		w.flush()
	}
	if w.cur == nil {
		w.cur = make([]byte, 0, max(blockBytes, len(enc)+binary.MaxVarintLen32))
	}
	w.cur = binary.AppendUvarint(w.cur, uint64(len(enc)))
	w.cur = append(w.cur, enc...)
	w.states++
}

func (w *blockWriter) flush() {
	w.q.push(w.cur, w.states)
	w.cur, w.states = nil, 0
}

// eachRecord calls f with every encoding of a block, in order.
func eachRecord(block []byte, f func(enc []byte)) {
	for len(block) > 0 {
		n, k := binary.Uvarint(block)
		f(block[k : k+int(n)])
		block = block[k+int(n):]
	}
}
