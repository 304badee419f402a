package server

import (
	"bufio"
	"context"
	"errors"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kvproto"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wire"
)

// pipeServer serves the pipelined client protocol (impl/kvproto) on
// connections the client port routed to it.
type pipeServer struct {
	n     *Node
	mu    sync.Mutex
	conns map[*pipeConn]struct{}
	wg    sync.WaitGroup
	done  bool
}

// pipeInflightMax bounds the requests one connection has in flight;
// beyond it a request is refused as busy (definite).
const pipeInflightMax = 8192

func newPipeServer(n *Node) *pipeServer { return &pipeServer{n: n, conns: map[*pipeConn]struct{}{}} }

func (s *pipeServer) close() {
	s.mu.Lock()
	s.done = true
	for c := range s.conns {
		_ = c.c.Close()
	}
	s.mu.Unlock()
}

func (s *pipeServer) wait() { s.wg.Wait() }

// pipeConn is one client connection: a reader that decodes request frames
// and hands each frame's writes to the replica as one batch of proposals
// and its reads as one batch of reads; the answers (called on the
// replica's goroutine, never blocking) queue in out, and a writer sends
// every answer ready at once in one frame. A request with no answer by its
// deadline is answered unknown_outcome (a write) or busy (a read).
type pipeConn struct {
	s   *pipeServer
	c   net.Conn
	mu  sync.Mutex
	out []kvproto.Response
	// pending maps a request id to its answered flag: whoever swaps it
	// first (the replica's answer or the deadline sweep) answers.
	pending map[uint64]*pendingReq
	signal  chan struct{}
	closed  chan struct{}
	// p is who is on the other side; refusedOnce keeps its refusals to
	// one log line per connection (each is counted).
	p           principal
	refusedOnce sync.Once
	// answeredAt: when the replica answered the writes in out (the reply
	// stage's start), guarded by mu.
	answeredAt []time.Time
}

type pendingReq struct {
	answered atomic.Bool
	deadline time.Time
	write    bool
}

func (s *pipeServer) serve(c net.Conn, br *bufio.Reader, p principal) {
	n := s.n
	pc := &pipeConn{s: s, c: c, pending: map[uint64]*pendingReq{}, signal: make(chan struct{}, 1), closed: make(chan struct{}), p: p}
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		_ = c.Close()
		return
	}
	s.conns[pc] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()
	n.stats.PipeConns.Add(1)
	go func() { defer s.wg.Done(); pc.writeLoop() }()
	defer s.wg.Done()
	err := pc.readLoop(br)
	if errors.Is(err, wire.ErrFrame) {
		n.stats.PipeBadFrames.Add(1)
		n.log.Warn("server: bad client frame; closing the connection", "remote", c.RemoteAddr().String(), "err", err)
	}
	close(pc.closed)
	_ = c.Close()
	s.mu.Lock()
	delete(s.conns, pc)
	s.mu.Unlock()
}

func (pc *pipeConn) readLoop(br *bufio.Reader) error {
	fr := wire.NewReader(br, kvproto.PayloadBytesMax)
	for {
		f, err := fr.Read()
		if err != nil {
			return err
		}
		if f.Type != kvproto.FrameRequests {
			return errFrameType(f.Type)
		}
		reqs, err := kvproto.DecodeRequests(f.Payload)
		if err != nil {
			return err
		}
		pc.handle(reqs)
	}
}

func errFrameType(t uint8) error {
	return &frameTypeError{t}
}

type frameTypeError struct{ t uint8 }

func (e *frameTypeError) Error() string {
	return "wire: bad frame: unexpected frame type on the client port"
}
func (e *frameTypeError) Unwrap() error { return wire.ErrFrame }

// handle submits one frame's requests: its writes as one proposal batch,
// its linearizable reads as one read batch; stale reads are answered at
// once. A write costs two allocations here (its tracking and its
// callback): its command is stamped in place in the frame's payload, and
// its answer is the store's result encoding as it is.
func (pc *pipeConn) handle(reqs []kvproto.Request) {
	n := pc.s.n
	deadline := time.Now().Add(n.cfg.RequestTimeout)
	var ps []replica.Proposal
	var writes []tracked
	var reads []replica.Read
	for k := range reqs {
		rq := reqs[k]
		n.stats.Requests.Add(1)
		p := &pendingReq{deadline: deadline, write: rq.Op == kvproto.OpCommand}
		if !pc.track(rq.ID, p) {
			pc.refuse(rq.ID, errorf(CodeBusy, "more than %d requests in flight on this connection, or a repeated id", pipeInflightMax))
			continue
		}
		if e := n.authorizeOp(pc.p, rq.Op); e != nil {
			n.stats.AuthRefused.Add(1)
			pc.refusedOnce.Do(func() { n.refused(pc.p, pc.c.RemoteAddr().String(), "pipelined op "+strconv.Itoa(int(rq.Op)), e) })
			pc.answerOnce(rq.ID, p, e)
			continue
		}
		if e := n.divergedRefusal(); e != nil {
			pc.answerOnce(rq.ID, p, e)
			continue
		}
		switch rq.Op {
		case kvproto.OpStaleRead:
			a := n.read(context.Background(), rq.Key, true)
			pc.answerRead(rq.ID, p, a)
		case kvproto.OpRead:
			n.stats.Reads.Add(1)
			reads = append(reads, replica.Read{Done: n.readDone(rq.Key, func(a readAnswer) { pc.answerRead(rq.ID, p, a) })})
		case kvproto.OpCommand:
			n.stats.Writes.Add(1)
			if e := restamp(rq.Command); e != nil {
				pc.answerOnce(rq.ID, p, e)
				continue
			}
			if ps == nil {
				ps = make([]replica.Proposal, 0, len(reqs)-k)
				writes = make([]tracked, 0, len(reqs)-k)
			}
			id := rq.ID
			ps = append(ps, replica.Proposal{Data: rq.Command, Done: func(r replica.Result) { pc.answerWrite(id, p, n.proposedOf(r)) }})
			writes = append(writes, tracked{id, p})
		}
	}
	if len(ps) > 0 {
		if e := n.proposeBatch(ps); e != nil {
			for _, w := range writes {
				pc.answerOnce(w.id, w.p, e)
			}
		}
	}
	if len(reads) > 0 {
		if n.stopping.Load() {
			for _, rd := range reads {
				rd.Done(replica.ReadResult{Err: replica.ErrClosed})
			}
		} else if err := n.run.Submit(replica.Event{Kind: replica.EventRead, Reads: reads}); err != nil {
			for _, rd := range reads {
				rd.Done(replica.ReadResult{Err: err})
			}
		}
	}
}

type tracked struct {
	id uint64
	p  *pendingReq
}

// restamp checks a client's command strictly and stamps the leader's clock
// into it, in place.
func restamp(b []byte) *Error {
	c, err := kv.DecodeCommand(b)
	if err == nil && reservedKey(c.Key) {
		return reservedKeyError(c.Key)
	}
	if err == nil {
		err = kv.StampTime(b, uint64(time.Now().UnixMilli()))
	}
	switch {
	case errors.Is(err, kv.ErrTooLarge):
		return errorf(CodeTooLarge, "%v", err)
	case err != nil:
		return errorf(CodeBadRequest, "%v", err)
	}
	return nil
}

// answerWrite answers a write with the store's result encoding as it is
// (not_found and mismatch are results, not errors, on this protocol).
func (pc *pipeConn) answerWrite(id uint64, p *pendingReq, pr proposed) {
	if !p.answered.CompareAndSwap(false, true) {
		return
	}
	if _, e := pc.s.n.outcome(pr); e != nil && e.Code != CodeNotFound && e.Code != CodeMismatch {
		pc.answer(id, e)
		return
	}
	pc.noteAnswered(pr.at) // before the push: the frame that carries it observes it
	pc.push(id, true, kvproto.Response{ID: id, Status: kvproto.StatusResult, Result: pr.res.Value})
}

func (pc *pipeConn) track(id uint64, p *pendingReq) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if _, dup := pc.pending[id]; dup || len(pc.pending) >= pipeInflightMax {
		return false
	}
	pc.pending[id] = p
	return true
}

func (pc *pipeConn) answerRead(id uint64, p *pendingReq, a readAnswer) {
	if !p.answered.CompareAndSwap(false, true) {
		return
	}
	if a.err != nil {
		pc.answer(id, a.err)
		return
	}
	pc.push(id, true, kvproto.Response{ID: id, Status: kvproto.StatusValue, Found: a.found, Revision: a.revision, Value: a.value})
}

// answerOnce answers a tracked request with an error, unless it was
// answered already.
func (pc *pipeConn) answerOnce(id uint64, p *pendingReq, e *Error) {
	if p.answered.CompareAndSwap(false, true) {
		pc.answer(id, e)
	}
}

// noteAnswered remembers when the replica answered a write queued for
// the next frame, for the reply stage (observed once the frame is
// written).
func (pc *pipeConn) noteAnswered(at time.Time) {
	pc.mu.Lock()
	pc.answeredAt = append(pc.answeredAt, at)
	pc.mu.Unlock()
}

func (pc *pipeConn) answer(id uint64, e *Error) { pc.push(id, true, pc.errorResponse(id, e)) }

// refuse answers a request that was never tracked.
func (pc *pipeConn) refuse(id uint64, e *Error) { pc.push(id, false, pc.errorResponse(id, e)) }

func (pc *pipeConn) errorResponse(id uint64, e *Error) kvproto.Response {
	n := pc.s.n
	n.leaderOf(e)
	if e.Definite() {
		n.stats.Definite.Add(1)
	} else {
		n.stats.Unknown.Add(1)
	}
	return kvproto.Response{ID: id, Status: kvproto.StatusError, Code: e.Code, Message: kvproto.Clip(e.Message),
		Definite: e.Definite(), Leader: uint64(e.Leader), LeaderAddr: e.LeaderAddr}
}

// push queues a response (never blocking: it may run on the replica's
// goroutine).
func (pc *pipeConn) push(id uint64, tracked bool, r kvproto.Response) {
	pc.mu.Lock()
	if tracked {
		delete(pc.pending, id)
	}
	pc.out = append(pc.out, r)
	pc.mu.Unlock()
	select {
	case pc.signal <- struct{}{}:
	default:
	}
}

// writeLoop writes every queued response at once, and answers requests
// past their deadline.
func (pc *pipeConn) writeLoop() {
	sweep := time.NewTicker(100 * time.Millisecond)
	defer sweep.Stop()
	var buf []byte
	var batch []kvproto.Response
	var answered []time.Time
	for {
		select {
		case <-pc.closed:
			return
		case <-pc.s.n.ctx.Done():
			_ = pc.c.Close()
			return
		case <-sweep.C:
			pc.expire()
			continue
		case <-pc.signal:
		}
		// One yield first, so that answers the replica is about to give
		// join this frame (the client's writeLoop does the same).
		runtime.Gosched()
		pc.mu.Lock()
		batch, pc.out = pc.out, batch[:0]
		answered, pc.answeredAt = pc.answeredAt, answered[:0]
		pc.mu.Unlock()
		buf = kvproto.AppendResponseFrames(buf[:0], batch)
		clear(batch)
		_ = pc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := pc.c.Write(buf); err != nil {
			_ = pc.c.Close()
			return
		}
		now := time.Now()
		for _, at := range answered {
			pc.s.n.metrics.observeStage(stageReply, now.Sub(at))
		}
	}
}

// expire answers requests past their deadline: a write's outcome is
// unknown (it may be in the log), a read is busy.
func (pc *pipeConn) expire() {
	now := time.Now()
	type due struct {
		id uint64
		p  *pendingReq
	}
	var late []due
	pc.mu.Lock()
	for id, p := range pc.pending {
		if now.After(p.deadline) {
			late = append(late, due{id, p})
		}
	}
	pc.mu.Unlock()
	for _, d := range late {
		if d.p.write {
			pc.answerOnce(d.id, d.p, errorf(CodeUnknown, "no answer within the request's time: the entry may be in the log"))
		} else {
			pc.answerOnce(d.id, d.p, errorf(CodeBusy, "the read was not confirmed in time"))
		}
	}
}
