package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wire"
)

// peer is the outbound side of one peer: a bounded queue that Send fills
// without blocking, and a writer goroutine (run) that owns the connection.
//
// Invariants: len(queue) <= QueueMessagesMax and queueBytes <=
// QueueBytesMax, queueBytes being the sum of sizeOf over queue; spare is
// nil or an empty slice the writer handed back.
type peer struct {
	t    *Transport
	id   raft.NodeID
	addr string

	mu         sync.Mutex
	queue      []replica.Message
	spare      []replica.Message
	queueBytes int
	connected  bool
	lastErr    string
	dropped    atomic.Uint64

	signal chan struct{} // capacity 1: rung by enqueue and Close

	// ctx ends the peer's writer: at Close, or when the peer leaves the
	// transport's peer set (SetPeers).
	ctx    context.Context
	cancel context.CancelFunc
}

func newPeer(t *Transport, id raft.NodeID, addr string) *peer {
	ctx, cancel := context.WithCancel(t.ctx)
	return &peer{t: t, id: id, addr: addr, signal: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
}

// sizeOf bounds the encoding of m from above.
func sizeOf(m *replica.Message) int {
	n := 4 + headerBytesMax + 8
	for _, r := range m.Records {
		n += 4 + len(r)
	}
	if m.Chunk != nil {
		n += 30 + len(m.Chunk.Data) + len(m.Chunk.Reason)
	}
	return n
}

func (p *peer) enqueue(m replica.Message) {
	size := sizeOf(&m)
	p.mu.Lock()
	if len(p.queue) >= p.t.cfg.QueueMessagesMax || p.queueBytes+size > p.t.cfg.QueueBytesMax {
		p.mu.Unlock()
		p.dropped.Add(1)
		p.t.stats.DroppedQueueFull.Add(1)
		return
	}
	p.queue = append(p.queue, m)
	p.queueBytes += size
	p.mu.Unlock()
	p.wake()
}

func (p *peer) wake() {
	select {
	case p.signal <- struct{}{}:
	default:
	}
}

// take returns every queued message; give hands the slice back.
func (p *peer) take() []replica.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queue
	p.queue, p.spare, p.queueBytes = p.spare, nil, 0
	return q
}

func (p *peer) give(q []replica.Message) {
	clear(q)
	p.mu.Lock()
	if p.spare == nil {
		p.spare = q[:0]
	}
	p.mu.Unlock()
}

// dropQueued drops what is queued (after a failed dial or write: the
// messages are stale by the time a connection is back).
func (p *peer) dropQueued() {
	q := p.take()
	if n := uint64(len(q)); n > 0 {
		p.dropped.Add(n)
		p.t.stats.DroppedWriteFailed.Add(n)
	}
	p.give(q)
}

func (p *peer) setState(connected bool, err error) {
	p.mu.Lock()
	p.connected = connected
	if err != nil {
		p.lastErr = err.Error()
	}
	p.mu.Unlock()
}

func (p *peer) status() PeerStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PeerStatus{ID: p.id, PeerAddr: p.addr, Connected: p.connected, Queued: len(p.queue), Dropped: p.dropped.Load(), LastError: p.lastErr}
}

// run owns the outbound connection until Close: connect, write batches
// until a write fails or the peer closes, back off, reconnect.
func (p *peer) run() {
	t := p.t
	backoff := t.cfg.BackoffMin
	failures := 0
	for p.ctx.Err() == nil {
		c, br, err := p.connect()
		if err != nil {
			failures++
			p.setState(false, err)
			p.dropQueued()
			if failures == 1 || failures%50 == 0 {
				t.log.Warn("transport: cannot reach peer", "peer", uint64(p.id), "addr", p.addr, "err", err, "failures", failures)
			}
			wait := backoff/2 + rand.N(backoff/2+1) // jitter in [backoff/2, backoff]
			backoff = min(2*backoff, t.cfg.BackoffMax)
			timer := time.NewTimer(wait)
			select {
			case <-p.ctx.Done():
			case <-timer.C:
			}
			timer.Stop()
			continue
		}
		if failures > 0 {
			t.log.Info("transport: connected to peer", "peer", uint64(p.id), "addr", p.addr, "after_failures", failures)
		}
		failures, backoff = 0, t.cfg.BackoffMin
		p.setState(true, nil)
		err = p.serve(c, br)
		p.setState(false, err)
		t.untrack(c)
		if p.ctx.Err() == nil {
			t.stats.Reconnects.Add(1)
			t.log.Info("transport: connection to peer lost", "peer", uint64(p.id), "err", err)
		}
	}
}

// connect dials the peer and runs the handshake.
func (p *peer) connect() (net.Conn, *bufio.Reader, error) {
	t := p.t
	t.stats.Dials.Add(1)
	ctx, cancel := context.WithTimeout(p.ctx, t.cfg.DialTimeout)
	c, err := t.cfg.Dial(ctx, p.addr)
	cancel()
	if err != nil {
		t.stats.DialFailures.Add(1)
		return nil, nil, err
	}
	if !t.track(c) {
		_ = c.Close()
		return nil, nil, errClosed
	}
	fail := func(err error) (net.Conn, *bufio.Reader, error) {
		t.untrack(c)
		return nil, nil, err
	}
	if t.cfg.Authenticate != nil {
		if err := t.cfg.Authenticate(c, p.id); err != nil {
			t.stats.DialFailures.Add(1)
			t.stats.IdentityRefused.Add(1)
			return fail(fmt.Errorf("the node at %s is not node %d: %w", p.addr, p.id, err))
		}
	}
	if err := c.SetDeadline(time.Now().Add(t.cfg.HandshakeTimeout)); err != nil {
		return fail(err)
	}
	h := hello{ClusterID: t.cfg.ClusterID, From: uint64(t.cfg.ID), To: uint64(p.id), ClientAddr: t.cfg.ClientAddr}
	if _, err := c.Write(wire.AppendFrame(nil, FrameHello, h.encode())); err != nil {
		t.stats.DialFailures.Add(1)
		return fail(err)
	}
	br := bufio.NewReaderSize(c, 4096)
	f, err := wire.NewReader(br, messageBytesMax+16).Read()
	if err != nil {
		t.stats.DialFailures.Add(1)
		return fail(fmt.Errorf("handshake: %w", err))
	}
	switch f.Type {
	case FrameRefuse:
		t.stats.HandshakesRefusedByPeer.Add(1)
		r, err := decodeRefusal(f.Payload)
		if err != nil {
			return fail(fmt.Errorf("handshake: bad refusal: %w", err))
		}
		return fail(fmt.Errorf("handshake refused by peer %d: %s", p.id, r.Message))
	case FrameAck:
	default:
		t.stats.BadFrames.Add(1)
		return fail(fmt.Errorf("handshake: %w: frame type %d, want an ack", wire.ErrFrame, f.Type))
	}
	a, err := decodeAck(f.Payload)
	if err != nil {
		t.stats.BadFrames.Add(1)
		return fail(fmt.Errorf("handshake: %w", err))
	}
	if a.ClusterID != t.cfg.ClusterID || a.ID != uint64(p.id) {
		t.stats.HandshakesRefusedByPeer.Add(1)
		return fail(fmt.Errorf("handshake: the node at %s is node %d of cluster %016x, not node %d of %016x",
			p.addr, a.ID, a.ClusterID, p.id, t.cfg.ClusterID))
	}
	t.learnClientAddr(p.id, a.ClientAddr)
	if err := c.SetDeadline(time.Time{}); err != nil {
		return fail(err)
	}
	return c, br, nil
}

// serve writes batches until a write fails, the peer closes the
// connection, or the transport closes.
func (p *peer) serve(c net.Conn, br *bufio.Reader) error {
	t := p.t
	dead := make(chan struct{})
	t.wg.Add(1)
	go func() {
		// The acceptor never writes after its ack: any byte or EOF here
		// means the connection is over.
		defer t.wg.Done()
		defer close(dead)
		var b [1]byte
		_, _ = br.Read(b[:])
	}()
	defer func() { _ = c.Close(); <-dead }()
	var buf []byte
	for {
		select {
		case <-p.ctx.Done():
			return errClosed
		case <-dead:
			return errors.New("closed by the peer")
		case <-p.signal:
		}
		q := p.take()
		if len(q) == 0 {
			p.give(q)
			continue
		}
		var frames, sent int
		buf, frames, sent = p.encode(buf[:0], q)
		err := t.writeFrames(c, buf)
		p.give(q)
		if err != nil {
			p.dropped.Add(uint64(sent))
			t.stats.DroppedWriteFailed.Add(uint64(sent))
			p.dropQueued()
			return err
		}
		t.stats.Writes.Add(1)
		t.stats.FramesSent.Add(uint64(frames))
		t.stats.MessagesSent.Add(uint64(sent))
		if cap(buf) > 4*t.cfg.FrameBytesMax {
			buf = nil
		}
	}
}

// encode appends q as Messages frames of at most FrameBytesMax payload
// bytes each. A message that cannot fit one frame, or cannot be encoded,
// is dropped and counted.
func (p *peer) encode(buf []byte, q []replica.Message) ([]byte, int, int) {
	t := p.t
	frames, sent := 0, 0
	if t.cfg.Clock != nil {
		// Stamped after the messages were queued, so at or after every
		// event that made them: their receipt is ordered after it.
		buf = wire.AppendFrame(buf, FrameClock, binary.LittleEndian.AppendUint64(nil, t.cfg.Clock.Stamp()))
		frames++
	}
	k := 0
	for k < len(q) {
		var start int
		buf, start = wire.BeginFrame(buf, FrameMessages)
		countAt := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		count := 0
		for ; k < len(q); k++ {
			size := sizeOf(&q[k])
			if size+4 > t.cfg.FrameBytesMax {
				t.stats.DroppedUnencodable.Add(1)
				t.log.Error("transport: message larger than a frame; dropped", "peer", uint64(p.id), "bytes", size)
				continue
			}
			if count > 0 && len(buf)-start-wire.HeaderBytes+size > t.cfg.FrameBytesMax {
				break
			}
			e := wire.Encoder{B: buf}
			if err := AppendMessage(&e, &q[k]); err != nil {
				t.stats.DroppedUnencodable.Add(1)
				t.log.Error("transport: message not encodable; dropped", "peer", uint64(p.id), "err", err)
				continue
			}
			buf = e.B
			count++
		}
		if count == 0 {
			buf = buf[:start]
			continue
		}
		buf[countAt], buf[countAt+1], buf[countAt+2], buf[countAt+3] = byte(count), byte(count>>8), byte(count>>16), byte(count>>24)
		buf = wire.FinishFrame(buf, start)
		frames++
		sent += count
	}
	return buf, frames, sent
}
