package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kvproto"
)

// session is the client's kv session: its id, the next sequence number,
// and the sequence numbers still in flight (their answers not received),
// whose smallest is the lowest unacknowledged one.
//
// Invariants: inflight is increasing; every seq in it is below next.
type session struct {
	mu       sync.Mutex
	id       uint64
	next     uint64
	inflight []uint64
	done     map[uint64]bool
	lastUse  time.Time
	register sync.Mutex // one registration at a time
}

func (s *session) init() { s.done = map[uint64]bool{} }

func (s *session) current() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// begin takes the next sequence number.
func (s *session) begin() (id, seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq = s.next
	s.next++
	s.inflight = append(s.inflight, seq)
	s.lastUse = time.Now()
	return s.id, seq
}

// lowest is the lowest unacknowledged sequence number.
func (s *session) lowestLocked() uint64 {
	if len(s.inflight) > 0 {
		return s.inflight[0]
	}
	return s.next
}

func (s *session) lowest() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lowestLocked()
}

// end marks seq answered (or given up: its outcome is reported, and a late
// duplicate of it is refused by the store, never re-executed).
func (s *session) end(seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done[seq] = true
	for len(s.inflight) > 0 && s.done[s.inflight[0]] {
		delete(s.done, s.inflight[0])
		s.inflight = s.inflight[1:]
	}
}

// expired forgets a session the cluster no longer has.
func (s *session) expired(id uint64) {
	s.mu.Lock()
	if s.id == id {
		s.id = 0
	}
	s.mu.Unlock()
}

// ensureSession registers a session if there is none.
func (c *Client) ensureSession(ctx context.Context) (uint64, error) {
	if id := c.sess.current(); id != 0 {
		return id, nil
	}
	c.sess.register.Lock()
	defer c.sess.register.Unlock()
	if id := c.sess.current(); id != 0 {
		return id, nil
	}
	// A register is at-least-once: a retried one opens a second session,
	// which expires unused.
	res, err := c.command(ctx, kv.Register(uint64(c.cfg.SessionTimeout.Milliseconds())), true)
	if err != nil {
		return 0, fmt.Errorf("client: registering a session: %w", err)
	}
	c.sess.mu.Lock()
	c.sess.id, c.sess.next, c.sess.inflight, c.sess.lastUse = res.Index, 1, nil, time.Now()
	clear(c.sess.done)
	c.sess.mu.Unlock()
	return res.Index, nil
}

// command sends one command outside any session (retried only when
// idempotent says so).
func (c *Client) command(ctx context.Context, cmd kv.Command, idempotent bool) (kv.Result, error) {
	data, err := cmd.Marshal()
	if err != nil {
		return kv.Result{}, &Error{Code: "bad_request", Message: err.Error()}
	}
	resp, maybe, err := c.roundTrip(ctx, func() kvproto.Request { return kvproto.Request{Op: kvproto.OpCommand, Command: data} }, idempotent)
	return c.result(resp, maybe, err)
}

// result turns a response into a kv result, ErrMismatch, or an error
// (ErrUnknown when an attempt may have been applied).
func (c *Client) result(resp kvproto.Response, maybe bool, err error) (kv.Result, error) {
	if err != nil {
		var e *Error
		if maybe && !(errors.As(err, &e) && definiteCode[e.Code]) {
			return kv.Result{}, fmt.Errorf("%w: %w", ErrUnknown, err)
		}
		return kv.Result{}, err
	}
	r, err := kv.DecodeResult(resp.Result)
	if err != nil {
		return kv.Result{}, fmt.Errorf("%w: the answer does not decode: %w", ErrUnknown, err)
	}
	switch r.Code {
	case kv.CodeOK, kv.CodeNotFound:
		return r, nil
	case kv.CodeMismatch:
		return r, &MismatchError{Revision: r.Revision}
	}
	return r, fmt.Errorf("%w: result %v", ErrUnknown, r)
}

// definiteCode: answers that settle a write even after earlier attempts
// were lost (they come from the store's answer or refuse before the log).
var definiteCode = map[string]bool{"bad_request": true, "too_large": true}

// write runs one write in the session (or without one).
func (c *Client) write(ctx context.Context, cmd kv.Command) (kv.Result, error) {
	if c.cfg.NoSession {
		return c.command(ctx, cmd, false)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	if _, err := c.ensureSession(ctx); err != nil {
		return kv.Result{}, err
	}
	id, seq := c.sess.begin()
	defer c.sess.end(seq)
	resp, maybe, err := c.roundTrip(ctx, func() kvproto.Request {
		data, err := cmd.InSession(id, seq, c.sess.lowest()).Marshal()
		if err != nil {
			data = nil // refused by the server as a bad request
		}
		return kvproto.Request{Op: kvproto.OpCommand, Command: data}
	}, true)
	var e *Error
	if errors.As(err, &e) && e.Code == "session_expired" {
		c.sess.expired(id)
	}
	return c.result(resp, maybe, err)
}

// keepAlive keeps the session alive while the client is idle.
func (c *Client) keepAlive() {
	every := c.cfg.SessionTimeout / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.sess.mu.Lock()
		id, idle, low := c.sess.id, time.Since(c.sess.lastUse) >= every, c.sess.lowestLocked()
		c.sess.mu.Unlock()
		if id == 0 || !idle {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		_, err := c.command(ctx, kv.KeepAlive(id, low), true)
		cancel()
		var e *Error
		if errors.As(err, &e) && e.Code == "session_expired" {
			c.sess.expired(id)
		}
	}
}
