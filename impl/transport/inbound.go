package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/wire"
)

// acceptLoop accepts peers' connections until Close.
func (t *Transport) acceptLoop() {
	for {
		c, err := t.cfg.Listener.Accept()
		if err != nil {
			if t.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			t.log.Warn("transport: accept failed", "err", err)
			timer := time.NewTimer(50 * time.Millisecond)
			select {
			case <-t.ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			continue
		}
		if !t.track(c) {
			_ = c.Close()
			return
		}
		t.stats.Accepted.Add(1)
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			defer t.untrack(c)
			if err := t.serveInbound(c); err != nil && t.ctx.Err() == nil {
				t.log.Info("transport: inbound connection closed", "remote", c.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

// tlsHandshake runs the TLS handshake of an inbound TLS connection (within
// the read deadline set), so that a refused certificate is logged as
// what it is. A connection that closes before saying anything is not.
func (t *Transport) tlsHandshake(c net.Conn) error {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.cfg.HandshakeTimeout)
	defer cancel()
	err := tc.HandshakeContext(ctx)
	if err == nil {
		return nil
	}
	t.stats.TLSHandshakesFailed.Add(1)
	if !errors.Is(err, io.EOF) {
		t.log.Warn("transport: peer refused: the TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err)
	}
	return fmt.Errorf("TLS handshake: %w", err)
}

// refuse answers a handshake with a refusal and counts it.
func (t *Transport) refuse(c net.Conn, code uint8, msg string) error {
	t.stats.HandshakesRefused.Add(1)
	t.log.Warn("transport: peer refused", "remote", c.RemoteAddr().String(), "why", msg)
	_ = t.writeFrames(c, wire.AppendFrame(nil, FrameRefuse, refusal{Code: code, Message: msg}.encode()))
	return errors.New(msg)
}

// serveInbound runs the acceptor's side: the handshake, then frames of
// messages, each message checked to come from the peer that shook hands
// and to be addressed to this node. Any frame or message that does not
// verify closes the connection and is counted.
func (t *Transport) serveInbound(c net.Conn) error {
	if err := c.SetReadDeadline(time.Now().Add(t.cfg.HandshakeTimeout)); err != nil {
		return err
	}
	if err := t.tlsHandshake(c); err != nil {
		return err
	}
	br := bufio.NewReaderSize(c, 64<<10)
	f, err := wire.NewReader(br, addrBytesMax+64).Read()
	if err != nil {
		if errors.Is(err, wire.ErrFrame) {
			t.stats.BadFrames.Add(1)
		}
		return fmt.Errorf("handshake: %w", err)
	}
	if f.Type != FrameHello {
		t.stats.BadFrames.Add(1)
		return fmt.Errorf("handshake: %w: frame type %d, want a hello", wire.ErrFrame, f.Type)
	}
	h, err := decodeHello(f.Payload)
	if err != nil {
		t.stats.BadFrames.Add(1)
		return fmt.Errorf("handshake: %w", err)
	}
	from := raft.NodeID(h.From)
	member := t.known(from)
	switch {
	case h.ClusterID != t.cfg.ClusterID:
		return t.refuse(c, refuseCluster, fmt.Sprintf("cluster id %016x is not this cluster's %016x", h.ClusterID, t.cfg.ClusterID))
	case !member || from == t.cfg.ID:
		return t.refuse(c, refuseNotPeer, fmt.Sprintf("node id %d is not a peer of node %d in cluster %016x", h.From, t.cfg.ID, t.cfg.ClusterID))
	case raft.NodeID(h.To) != t.cfg.ID:
		return t.refuse(c, refuseWrongDst, fmt.Sprintf("this is node %d, not node %d", t.cfg.ID, h.To))
	}
	if t.cfg.Authenticate != nil {
		if err := t.cfg.Authenticate(c, from); err != nil {
			t.stats.IdentityRefused.Add(1)
			return t.refuse(c, refuseIdentity, fmt.Sprintf("the hello claims node %d: %v", h.From, err))
		}
	}
	a := ack{ClusterID: t.cfg.ClusterID, ID: uint64(t.cfg.ID), ClientAddr: t.cfg.ClientAddr}
	if err := t.writeFrames(c, wire.AppendFrame(nil, FrameAck, a.encode())); err != nil {
		return err
	}
	t.learnClientAddr(from, h.ClientAddr)
	t.setInbound(from, c)
	defer t.clearInbound(from, c)
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return err
	}
	return t.readMessages(c, br, from)
}

func (t *Transport) setInbound(from raft.NodeID, c net.Conn) {
	t.mu.Lock()
	old := t.inbound[from]
	t.inbound[from] = c
	t.mu.Unlock()
	if old != nil {
		// The peer reconnected (it restarted, or its side saw the old
		// connection fail first): the old one is over.
		t.stats.ConnectionsReplaced.Add(1)
		_ = old.Close()
	}
}

func (t *Transport) clearInbound(from raft.NodeID, c net.Conn) {
	t.mu.Lock()
	if t.inbound[from] == c {
		delete(t.inbound, from)
	}
	t.mu.Unlock()
}

func (t *Transport) readMessages(c net.Conn, br *bufio.Reader, from raft.NodeID) error {
	fr := wire.NewReader(br, t.cfg.FrameBytesMax)
	for {
		f, err := fr.Read()
		if err != nil {
			if errors.Is(err, wire.ErrFrame) {
				t.stats.BadFrames.Add(1)
				t.log.Warn("transport: bad frame from peer; closing", "peer", uint64(from), "err", err)
			}
			return err
		}
		t.stats.FramesReceived.Add(1)
		t.stats.BytesReceived.Add(uint64(wire.HeaderBytes + len(f.Payload) + wire.TrailerBytes))
		if f.Type == FrameClock {
			if len(f.Payload) != clockPayloadBytes {
				t.stats.BadFrames.Add(1)
				t.log.Warn("transport: bad clock frame from peer; closing", "peer", uint64(from), "bytes", len(f.Payload))
				return fmt.Errorf("%w: clock frame of %d bytes", wire.ErrFrame, len(f.Payload))
			}
			if t.cfg.Clock != nil {
				t.cfg.Clock.Observe(binary.LittleEndian.Uint64(f.Payload))
			}
			continue
		}
		if f.Type != FrameMessages {
			t.stats.BadFrames.Add(1)
			return fmt.Errorf("%w: frame type %d after the handshake", wire.ErrFrame, f.Type)
		}
		ms, err := DecodeBatch(f.Payload, t.cfg.Limits)
		if err != nil {
			t.stats.BadMessages.Add(1)
			t.log.Warn("transport: bad message from peer; closing", "peer", uint64(from), "err", err)
			return err
		}
		for k := range ms {
			if ms[k].From != from || ms[k].To != t.cfg.ID {
				t.stats.BadMessages.Add(1)
				t.log.Warn("transport: message with the wrong sender or recipient; closing", "peer", uint64(from), "msg", ms[k].String())
				return fmt.Errorf("message %d->%d on the connection of peer %d to node %d", ms[k].From, ms[k].To, from, t.cfg.ID)
			}
		}
		t.stats.MessagesReceived.Add(uint64(len(ms)))
		for k := range ms {
			t.cfg.Deliver(ms[k])
		}
	}
}
