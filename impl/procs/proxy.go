package procs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/durableraft/durableraft/impl/wire"
)

// Proxy relays a cluster's peer traffic so that tests can cut and slow
// it (the kernel here has no netem): one listener per node at the address
// --peers names, forwarding to the node's real peer listener. Every peer
// connection carries one direction of one link — the dialer's messages to
// the node it reached (the acceptor only answers the handshake) — so a
// rule on the link (from, to) is a one-way rule, and both directions of a
// pair make a symmetric one. The source is read from the connection's
// hello frame. Plain TCP only: with TLS the hello is not readable.
type Proxy struct {
	mu     sync.Mutex
	rules  map[Link]Rule
	conns  map[Link]map[*proxyConn]struct{}
	ls     []net.Listener
	wg     sync.WaitGroup
	closed bool
	// refused counts connections closed at their hello because their link
	// was cut; cut counts live connections closed by a rule (Counts).
	refused, cut int
}

// Counts returns the connections refused at their hello and the live
// ones closed by a cut.
func (p *Proxy) Counts() (refused, cut int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused, p.cut
}

// Link is one direction between two nodes.
type Link struct{ From, To int }

// Rule is what the proxy does to a link: Drop cuts it (live connections
// are closed, new ones closed at their hello, as a partition that resets
// connections); Delay holds every byte that long (in order).
type Rule struct {
	Drop  bool
	Delay time.Duration
}

type proxyConn struct{ in, out net.Conn }

func (pc *proxyConn) close() {
	_ = pc.in.Close()
	if pc.out != nil {
		_ = pc.out.Close()
	}
}

// newProxy listens at each node's PeerAddr and forwards to its ListenPeer.
func newProxy(nodes []*Node) (*Proxy, error) {
	p := &Proxy{rules: map[Link]Rule{}, conns: map[Link]map[*proxyConn]struct{}{}}
	for _, n := range nodes {
		l, err := net.Listen("tcp", n.PeerAddr)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("proxy for node %d: %w", n.ID, err)
		}
		p.ls = append(p.ls, l)
		p.wg.Add(1)
		go func(to int, target string) { defer p.wg.Done(); p.accept(l, to, target) }(n.ID, n.ListenPeer)
	}
	return p, nil
}

// Set sets the rule of the link from → to (the zero Rule heals it).
func (p *Proxy) Set(from, to int, r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := Link{from, to}
	if r == (Rule{}) {
		delete(p.rules, l)
	} else {
		p.rules[l] = r
	}
	if r.Drop {
		for pc := range p.conns[l] {
			pc.close()
			p.cut++
		}
		delete(p.conns, l)
	}
}

// CutBoth cuts both directions between a and b.
func (p *Proxy) CutBoth(a, b int) {
	p.Set(a, b, Rule{Drop: true})
	p.Set(b, a, Rule{Drop: true})
}

// Isolate cuts node id off from every other node of ids, both ways.
func (p *Proxy) Isolate(id int, ids ...int) {
	for _, o := range ids {
		if o != id {
			p.CutBoth(id, o)
		}
	}
}

// HealAll removes every rule.
func (p *Proxy) HealAll() {
	p.mu.Lock()
	p.rules = map[Link]Rule{}
	p.mu.Unlock()
}

func (p *Proxy) rule(l Link) Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rules[l]
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for _, l := range p.ls {
		_ = l.Close()
	}
	for _, cs := range p.conns {
		for pc := range cs {
			pc.close()
		}
	}
	p.conns = map[Link]map[*proxyConn]struct{}{}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept(l net.Listener, to int, target string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.relay(c, to, target) }()
	}
}

// readHello reads the dialer's first frame whole and returns it with the
// sender's id.
func readHello(c net.Conn) ([]byte, int, error) {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	hdr := make([]byte, wire.HeaderBytes)
	if _, err := io.ReadFull(c, hdr); err != nil {
		return nil, 0, err
	}
	if err := wire.CheckHeader(hdr, 1024); err != nil {
		return nil, 0, err
	}
	n := int(binary.LittleEndian.Uint32(hdr[4:]))
	raw := append(hdr, make([]byte, n+wire.TrailerBytes)...)
	if _, err := io.ReadFull(c, raw[wire.HeaderBytes:]); err != nil {
		return nil, 0, err
	}
	f, err := wire.Decode(raw, 1024)
	if err != nil {
		return nil, 0, err
	}
	if len(f.Payload) < 16 {
		return nil, 0, errors.New("proxy: a hello too short")
	}
	return raw, int(binary.LittleEndian.Uint64(f.Payload[8:16])), nil
}

// relay carries one connection to node to: its hello decides the link;
// then bytes flow both ways, the dialer's under the link's rule.
func (p *Proxy) relay(in net.Conn, to int, target string) {
	hello, from, err := readHello(in)
	if err != nil {
		_ = in.Close()
		return
	}
	l := Link{from, to}
	pc := &proxyConn{in: in}
	if !p.track(l, pc) {
		return
	}
	defer p.untrack(l, pc)
	out, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	pc.out = out
	p.mu.Unlock()
	if p.rule(l).Drop { // cut while dialling
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }() // the handshake's answer
	go func() { p.forward(l, hello, in, out); done <- struct{}{} }()
	<-done
}

// track registers pc on its link unless the link is cut.
func (p *Proxy) track(l Link, pc *proxyConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.rules[l].Drop {
		p.refused++
		_ = pc.in.Close()
		return false
	}
	if p.conns[l] == nil {
		p.conns[l] = map[*proxyConn]struct{}{}
	}
	p.conns[l][pc] = struct{}{}
	return true
}

func (p *Proxy) untrack(l Link, pc *proxyConn) {
	p.mu.Lock()
	delete(p.conns[l], pc)
	p.mu.Unlock()
	pc.close()
}

type chunk struct {
	b   []byte
	due time.Time
}

// forward copies in to out, each chunk held for the link's delay as it
// stands when the chunk is read (order kept).
func (p *Proxy) forward(l Link, first []byte, in, out net.Conn) {
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		q <- chunk{first, time.Now().Add(p.rule(l).Delay)}
		for {
			b := make([]byte, 32<<10)
			n, err := in.Read(b)
			if n > 0 {
				q <- chunk{b[:n], time.Now().Add(p.rule(l).Delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		if d := time.Until(c.due); d > 0 {
			t := time.NewTimer(d) // the link's delay itself
			<-t.C
		}
		if _, err := out.Write(c.b); err != nil {
			_ = in.Close()
			for range q { // let the reader end
			}
			return
		}
	}
}
