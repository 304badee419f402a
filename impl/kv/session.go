package kv

import (
	"container/heap"
	"slices"
)

// response is an executed request's answer, kept for retries.
type response struct {
	seq             uint64
	code            Code
	index, revision uint64
}

func (r response) result() Result { return Result{Code: r.code, Index: r.index, Revision: r.revision} }

// session is one client session (Raft dissertation §6.3).
//
// Invariants: 1 <= id <= the applied index; 1 <= timeoutMs <=
// SessionTimeoutMsMax; lastActiveMs <= the store's clock <= deadline();
// responses are sorted by seq, strictly, every seq in [lowestUnacked,
// lowestUnacked+SessionWindowMax), every code Executed, every index in
// (id, applied index]; len(responses) <= SessionWindowMax; the session is
// at expiry[heapIndex]; hash is the hasher's session element of the header.
type session struct {
	id            uint64
	timeoutMs     uint64
	lastActiveMs  uint64
	lowestUnacked uint64
	responses     []response
	heapIndex     int
	hash          uint64
}

func (s *session) deadline() uint64 { return s.lastActiveMs + s.timeoutMs }

// find returns the position of seq in responses and whether it is there.
func (s *session) find(seq uint64) (int, bool) {
	return slices.BinarySearchFunc(s.responses, seq, func(r response, seq uint64) int {
		switch {
		case r.seq < seq:
			return -1
		case r.seq > seq:
			return 1
		}
		return 0
	})
}

// expiryHeap orders the live sessions by (deadline, id): the next to expire
// first, ties broken by id so that every replica expires in the same order.
type expiryHeap []*session

func (h expiryHeap) Len() int { return len(h) }
func (h expiryHeap) Less(i, j int) bool {
	di, dj := h[i].deadline(), h[j].deadline()
	return di < dj || di == dj && h[i].id < h[j].id
}
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}
func (h *expiryHeap) Push(x any) {
	s := x.(*session)
	s.heapIndex = len(*h)
	*h = append(*h, s)
}
func (h *expiryHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	s.heapIndex = -1
	return s
}

// sessionRow is a row of the session decision table (docs/kv.md, "Session
// rules"): what a write carrying session fields meets at apply time. The
// first row that matches decides, in this order.
type sessionRow uint8

const (
	rowNoSession sessionRow = iota + 1 // S1: no session: execute, keep nothing (at-least-once)
	rowUnknown                         // S2: no live session with this id: refuse
	rowStale                           // S3: seq below the lowest unacknowledged: refuse
	rowCached                          // S4: seq answered before: the kept answer
	rowWindow                          // S5: seq beyond the window: refuse
	rowExecute                         // S6: a new request in the window: execute, keep the answer
	rowEnd
)

type sessionAction uint8

const (
	actExecute     sessionAction = iota + 1 // execute, keep nothing
	actExecuteKeep                          // execute and keep the answer for retries
	actRefuse                               // answer refuse, execute nothing
	actCached                               // answer the kept response, execute nothing
)

// sessionTable gives each row its action, and the test-only switch that
// replaces that action by a re-execution (the failure the row prevents).
var sessionTable = [rowEnd]struct {
	name   string
	action sessionAction
	refuse Code
	bug    Bug
}{
	rowNoSession: {"S1 no-session", actExecute, 0, 0},
	rowUnknown:   {"S2 unknown-or-expired", actRefuse, CodeSessionExpired, BugExpiredReexecutes},
	rowStale:     {"S3 below-lowest-unacked", actRefuse, CodeStale, BugStaleReexecutes},
	rowCached:    {"S4 answered-before", actCached, 0, BugNoDedup},
	rowWindow:    {"S5 beyond-window", actRefuse, CodeWindowFull, 0},
	rowExecute:   {"S6 new-in-window", actExecuteKeep, 0, 0},
}

func (r sessionRow) String() string { return sessionTable[r].name }

// classify finds the row of a write c on sess (nil: no live session with
// c's id). sess has been touched: its lowest unacknowledged sequence number
// already includes c's.
func classify(c Command, sess *session) sessionRow {
	switch {
	case c.Session == 0:
		return rowNoSession
	case sess == nil:
		return rowUnknown
	case c.Seq < sess.lowestUnacked:
		return rowStale
	}
	if _, ok := sess.find(c.Seq); ok {
		return rowCached
	}
	if c.Seq-sess.lowestUnacked >= SessionWindowMax {
		return rowWindow
	}
	return rowExecute
}

// request applies a write through the session rules.
func (st *Store) request(index uint64, c Command) Result {
	var sess *session
	if c.Session != 0 {
		if sess = st.sessions[c.Session]; sess != nil {
			st.touch(sess, c.LowestUnacked)
		}
	}
	row := classify(c, sess)
	st.rows[row]++
	st.mark(sessionMarks[row])
	action := sessionTable[row].action
	if st.bugs&sessionTable[row].bug != 0 {
		action = actExecute
		if row == rowCached {
			action = actExecuteKeep
		}
	}
	switch action {
	case actRefuse:
		return Result{Code: sessionTable[row].refuse, Index: index}
	case actCached:
		i, _ := sess.find(c.Seq)
		return sess.responses[i].result()
	}
	r := st.write(index, c)
	if action == actExecuteKeep {
		st.keep(sess, c.Seq, r)
	}
	return r
}

// keep records r as the answer to seq in sess (replacing an older answer
// only under BugNoDedup).
func (st *Store) keep(sess *session, seq uint64, r Result) {
	if !r.Code.Executed() || seq < sess.lowestUnacked || seq-sess.lowestUnacked >= SessionWindowMax {
		violated("session %d keeps %v for seq %d (lowest unacked %d)", sess.id, r, seq, sess.lowestUnacked)
	}
	resp := response{seq: seq, code: r.Code, index: r.Index, revision: r.Revision}
	i, found := sess.find(seq)
	if found {
		st.hash -= st.hasher.response(sess.id, sess.responses[i])
		sess.responses[i] = resp
	} else {
		sess.responses = slices.Insert(sess.responses, i, resp)
	}
	st.hash += st.hasher.response(sess.id, resp)
	if len(sess.responses) > SessionWindowMax {
		violated("session %d keeps %d responses", sess.id, len(sess.responses))
	}
}

// touch records activity on sess at the store's clock, and raises its
// lowest unacknowledged sequence number to lowestUnacked (if higher),
// dropping the responses below it.
func (st *Store) touch(sess *session, lowestUnacked uint64) {
	st.hash -= sess.hash
	sess.lastActiveMs = st.clockMs
	if lowestUnacked > sess.lowestUnacked {
		sess.lowestUnacked = lowestUnacked
		n, _ := sess.find(lowestUnacked)
		for _, r := range sess.responses[:n] {
			st.hash -= st.hasher.response(sess.id, r)
		}
		sess.responses = slices.Delete(sess.responses, 0, n)
	}
	sess.hash = st.hasher.session(sess)
	st.hash += sess.hash
	heap.Fix(&st.expiry, sess.heapIndex)
}

// register opens a session whose id is index.
func (st *Store) register(index uint64, c Command) Result {
	if len(st.sessions) >= SessionsMax {
		st.stats.SessionLimit++
		return Result{Code: CodeSessionLimit, Index: index}
	}
	if st.sessions[index] != nil {
		violated("session %d registered twice", index)
	}
	sess := &session{id: index, timeoutMs: c.TimeoutMs, lastActiveMs: st.clockMs, lowestUnacked: 1}
	st.addSession(sess)
	st.stats.SessionsRegistered++
	return Result{Code: CodeOK, Index: index}
}

func (st *Store) addSession(sess *session) {
	sess.hash = st.hasher.session(sess)
	st.hash += sess.hash
	for _, r := range sess.responses {
		st.hash += st.hasher.response(sess.id, r)
	}
	st.sessions[sess.id] = sess
	heap.Push(&st.expiry, sess)
}

// removeSession drops sess and everything it kept.
func (st *Store) removeSession(sess *session) {
	st.hash -= sess.hash
	for _, r := range sess.responses {
		st.hash -= st.hasher.response(sess.id, r)
	}
	delete(st.sessions, sess.id)
	heap.Remove(&st.expiry, sess.heapIndex)
}

// expire drops every session whose deadline is before the clock, in
// (deadline, id) order.
func (st *Store) expire() {
	for len(st.expiry) > 0 && st.expiry[0].deadline() < st.clockMs {
		st.removeSession(st.expiry[0])
		st.stats.SessionsExpired++
		st.mark(MarkSessionExpired)
	}
}

func (st *Store) keepAlive(index uint64, c Command) Result {
	sess := st.sessions[c.Session]
	if sess == nil {
		st.rows[rowUnknown]++
		return Result{Code: CodeSessionExpired, Index: index}
	}
	st.touch(sess, c.LowestUnacked)
	return Result{Code: CodeOK, Index: index}
}

func (st *Store) closeSession(index uint64, c Command) Result {
	sess := st.sessions[c.Session]
	if sess == nil {
		st.rows[rowUnknown]++
		return Result{Code: CodeSessionExpired, Index: index}
	}
	st.removeSession(sess)
	st.stats.SessionsClosed++
	return Result{Code: CodeOK, Index: index}
}
