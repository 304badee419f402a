package wal

// recordRing holds the tail cache's records in index order in a ring
// buffer: evicting from the front and appending at the back copy nothing
// (a slice re-sliced from the front loses capacity and reallocated, copying
// the whole cache, every quarter of its length of appends). Its capacity is
// a power of two; an evicted slot is cleared, so the ring keeps no record
// it no longer holds.
//
// Invariant: n <= len(buf); len(buf) is 0 or a power of two; the slots
// outside [head, head+n) (mod len(buf)) are nil.
type recordRing struct {
	buf  [][]byte
	head int
	n    int
}

func (q *recordRing) len() int { return q.n }

// at is the k-th record from the front, 0 <= k < len().
func (q *recordRing) at(k int) []byte {
	if k < 0 || k >= q.n {
		violated("tail cache record %d of %d", k, q.n)
	}
	return q.buf[(q.head+k)&(len(q.buf)-1)]
}

// push appends recs at the back.
func (q *recordRing) push(recs [][]byte) {
	if q.n+len(recs) > len(q.buf) {
		q.grow(q.n + len(recs))
	}
	mask := len(q.buf) - 1
	for _, r := range recs {
		q.buf[(q.head+q.n)&mask] = r
		q.n++
	}
}

// grow makes room for at least want records, keeping their order.
func (q *recordRing) grow(want int) {
	size := max(16, len(q.buf))
	for size < want {
		size *= 2
	}
	buf := make([][]byte, size)
	for k := 0; k < q.n; k++ {
		buf[k] = q.at(k)
	}
	q.buf, q.head = buf, 0
}

// dropFront removes the first k records and returns their bytes.
func (q *recordRing) dropFront(k int) int {
	if k < 0 || k > q.n {
		violated("drop of %d tail cache records of %d", k, q.n)
	}
	bytes := 0
	mask := len(q.buf) - 1
	for ; k > 0; k-- {
		bytes += len(q.buf[q.head])
		q.buf[q.head] = nil
		q.head = (q.head + 1) & mask
		q.n--
	}
	return bytes
}

// keep keeps the first k records, removes the rest and returns their bytes.
func (q *recordRing) keep(k int) int {
	if k < 0 || k > q.n {
		violated("keep of %d tail cache records of %d", k, q.n)
	}
	bytes := 0
	mask := len(q.buf) - 1
	for q.n > k {
		q.n--
		at := (q.head + q.n) & mask
		bytes += len(q.buf[at])
		q.buf[at] = nil
	}
	return bytes
}

// reset removes every record and releases the buffer.
func (q *recordRing) reset() { *q = recordRing{} }
