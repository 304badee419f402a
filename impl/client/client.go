package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kvproto"
)

// Config configures a Client.
type Config struct {
	// Endpoints are the client addresses of some or all members; the
	// client finds the leader from them.
	Endpoints []string
	// NoSession turns sessions off: writes are then at-least-once, and a
	// write whose answer was lost is reported ErrUnknown at once instead of
	// retried.
	NoSession bool
	// SessionTimeout is the session's timeout on the servers (default 60s);
	// the client keeps it alive at a third of it.
	SessionTimeout time.Duration
	// RequestTimeout bounds a call whose context has no deadline (default
	// 10s); DialTimeout one dial (default 1s).
	RequestTimeout, DialTimeout time.Duration
	// Dial makes a connection to a member's client address, within ctx
	// (which carries DialTimeout); default TCP. With TLS it is
	// tlsauth.Store.Dialer: the client's certificate, and the server's
	// checked to be a member's of the client's cluster.
	Dial   func(ctx context.Context, addr string) (net.Conn, error)
	Logger *slog.Logger
}

// Errors.
var (
	// ErrUnknown: the write may or may not have been applied (the answer
	// was lost and could not be recovered before the deadline, or the
	// session expired). Like every error here, it wraps the last cause.
	ErrUnknown = errors.New("client: outcome unknown")
	// ErrMismatch: a CAS or conditional delete found another revision
	// (MismatchError says which). Definite: nothing changed.
	ErrMismatch = errors.New("client: revision mismatch")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("client: closed")
)

// Error is a definite refusal from the cluster: the request was not
// applied (or, for not_found, applied with that answer).
type Error struct {
	Code, Message string
}

func (e *Error) Error() string { return "client: " + e.Code + ": " + e.Message }

// MismatchError carries the key's revision when a comparison failed.
type MismatchError struct{ Revision uint64 }

func (e *MismatchError) Error() string {
	return fmt.Sprintf("client: revision mismatch: the key's revision is %d", e.Revision)
}
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// Client talks the pipelined protocol to a cluster: many requests in
// flight on one connection to the leader, batched into frames; follows
// the leader across changes; with a session (the default) a write retried
// after a lost answer, a leader change or a reconnection is applied
// exactly once (docs/kv.md, "Sessions"). Safe for concurrent use.
type Client struct {
	cfg    Config
	log    *slog.Logger
	nextID atomic.Uint64

	mu       sync.Mutex
	cn       *conn
	target   string
	rotation int
	closed   bool

	sess session

	stop chan struct{}
	wg   sync.WaitGroup
}

// New returns a client; it connects on first use.
func New(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("client: no endpoints")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 60 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Dial == nil {
		d := &net.Dialer{}
		cfg.Dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	c := &Client{cfg: cfg, log: cfg.Logger, target: cfg.Endpoints[0], stop: make(chan struct{})}
	c.sess.init()
	if !cfg.NoSession {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); c.keepAlive() }()
	}
	return c, nil
}

// Close closes the session (best effort) and the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	close(c.stop)
	c.wg.Wait()
	if id := c.sess.current(); id != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = c.command(ctx, kv.Close(id), false)
		cancel()
	}
	c.mu.Lock()
	if c.cn != nil {
		c.cn.fail(ErrClosed)
		c.cn = nil
	}
	c.mu.Unlock()
	return nil
}

// connection returns the live connection, dialling the current target.
func (c *Client) connection(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.cn != nil && c.cn.alive() {
		return c.cn, nil
	}
	dctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	cn, err := dial(dctx, c.target, c.cfg.Dial)
	cancel()
	if err != nil {
		c.rotateLocked()
		return nil, err
	}
	c.cn = cn
	return cn, nil
}

func (c *Client) rotateLocked() {
	c.rotation++
	c.target = c.cfg.Endpoints[c.rotation%len(c.cfg.Endpoints)]
}

// redirect points the client at the leader (or the next endpoint when the
// server knows of none); the old connection closes once its requests are
// answered.
func (c *Client) redirect(from *conn, leaderAddr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cn != from {
		return // another caller moved on already
	}
	if leaderAddr != "" && leaderAddr != c.target {
		c.target = leaderAddr
	} else {
		c.rotateLocked()
	}
	if c.cn != nil {
		c.cn.retire()
		c.cn = nil
	}
}

func (c *Client) dropConn(cn *conn) {
	c.mu.Lock()
	if c.cn == cn {
		c.cn = nil
		c.rotateLocked()
	}
	c.mu.Unlock()
}

// retryable codes: definite refusals after which another node (or a later
// try) may succeed.
var retryable = map[string]bool{
	"not_leader": true, "no_leader": true, "leader_unreachable": true, "fenced": true,
	"busy": true, "stopping": true, "wal_failed": true, "lost": true,
}

// movesOn are the retryable refusals that say this node will not serve
// (not the leader, none known, fenced, stopping, its WAL failed): the
// client moves to the leader named, or the next endpoint. A node whose WAL
// failed serves nothing until restarted; staying on it kept a client's
// every write refused while the others had a leader
// (conformance/proc TestProcessFailingDisk found it).
var movesOn = map[string]bool{"not_leader": true, "no_leader": true, "fenced": true, "stopping": true, "wal_failed": true}

// roundTrip sends the request build makes (called again for each attempt)
// until a definite answer or ctx's end. idempotent: retrying after an
// unknown outcome is safe (reads, session writes). It reports whether an
// attempt may have reached a log (for a write that then fails: unknown).
func (c *Client) roundTrip(ctx context.Context, build func() kvproto.Request, idempotent bool) (kvproto.Response, bool, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.RequestTimeout)
		defer cancel()
	}
	maybe := false
	var last error
	backoff := 5 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return kvproto.Response{}, maybe, fmt.Errorf("%w (last: %w)", ctx.Err(), last)
			case <-c.stop:
				t.Stop()
				return kvproto.Response{}, maybe, ErrClosed
			case <-t.C:
			}
			backoff = min(2*backoff, 200*time.Millisecond)
		}
		cn, err := c.connection(ctx)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return kvproto.Response{}, maybe, err
			}
			last = err
			continue
		}
		rq := build()
		rq.ID = c.nextID.Add(1)
		resp, sent, err := cn.do(ctx, rq)
		if err != nil {
			maybe = maybe || sent
			last = err
			if ctx.Err() != nil {
				return kvproto.Response{}, maybe, fmt.Errorf("%w (last: %w)", ctx.Err(), err)
			}
			c.dropConn(cn)
			if sent && !idempotent {
				return kvproto.Response{}, true, err
			}
			continue
		}
		if resp.Status != kvproto.StatusError {
			return resp, maybe, nil
		}
		switch {
		case retryable[resp.Code]:
			last = &Error{Code: resp.Code, Message: resp.Message}
			if movesOn[resp.Code] {
				c.redirect(cn, resp.LeaderAddr)
			}
			continue
		case !resp.Definite:
			maybe = true
			last = &Error{Code: resp.Code, Message: resp.Message}
			if idempotent && resp.Code != "session_expired" {
				continue
			}
			return resp, true, last
		}
		return resp, maybe, &Error{Code: resp.Code, Message: resp.Message}
	}
}
