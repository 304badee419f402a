package transport

import (
	"bufio"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
	"github.com/durableraft/durableraft/impl/wire"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// inbox collects delivered messages; changed is rung at every delivery.
type inbox struct {
	mu      sync.Mutex
	msgs    []replica.Message
	changed chan struct{}
}

func newInbox() *inbox { return &inbox{changed: make(chan struct{}, 1)} }

func (b *inbox) deliver(m replica.Message) {
	b.mu.Lock()
	b.msgs = append(b.msgs, m)
	b.mu.Unlock()
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

func (b *inbox) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.msgs)
}

// waitFor waits until cond holds, rechecking at every delivery and at
// least every 10ms (cond may look at counters), failing after 10s.
func waitFor(t *testing.T, what string, wake <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-wake:
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

type node struct {
	tr *Transport
	in *inbox
}

// cluster starts transports for ids on loopback listeners; cfg edits each
// config before New.
func cluster(t *testing.T, ids []raft.NodeID, edit func(*Config)) map[raft.NodeID]*node {
	t.Helper()
	ls := map[raft.NodeID]net.Listener{}
	peers := map[raft.NodeID]string{}
	for _, id := range ids {
		ls[id] = listen(t)
		peers[id] = ls[id].Addr().String()
	}
	out := map[raft.NodeID]*node{}
	for _, id := range ids {
		in := newInbox()
		cfg := Config{ID: id, ClusterID: 0xc1, Peers: peers, ClientAddr: "client-" + peers[id], Listener: ls[id], Deliver: in.deliver, Logger: quiet}
		if edit != nil {
			edit(&cfg)
		}
		tr, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tr.Start()
		t.Cleanup(func() { _ = tr.Close() })
		out[id] = &node{tr: tr, in: in}
	}
	return out
}

func TestDelivery(t *testing.T) {
	ns := cluster(t, []raft.NodeID{1, 2, 3}, nil)
	ms := sampleMessages()
	for k := range ms {
		ms[k].From, ms[k].To = 1, 2
	}
	ns[1].tr.Send(ms)
	ns[1].tr.Send([]replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 1, To: 3, Term: 1}}})
	waitFor(t, "delivery to 2", ns[2].in.changed, func() bool { return ns[2].in.count() == len(ms) })
	waitFor(t, "delivery to 3", ns[3].in.changed, func() bool { return ns[3].in.count() == 1 })
	ns[2].in.mu.Lock()
	if d := eq(ms, ns[2].in.msgs); d != "" {
		t.Fatalf("delivered (-sent +got):\n%s", d)
	}
	ns[2].in.mu.Unlock()
	// The handshake told both sides the other's client address.
	if got, want := ns[1].tr.ClientAddr(2), "client-"+ns[2].tr.Addr().String(); got != want {
		t.Fatalf("1 learned %q for 2, want %q", got, want)
	}
	if got, want := ns[2].tr.ClientAddr(1), "client-"+ns[1].tr.Addr().String(); got != want {
		t.Fatalf("2 learned %q for 1, want %q", got, want)
	}
}

// lamport is a test Clock: a counter that Stamp reads and Observe raises.
type lamport struct {
	mu       sync.Mutex
	now      uint64
	observed []uint64
}

func (l *lamport) Stamp() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now
}

func (l *lamport) Observe(c uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observed = append(l.observed, c)
	l.now = max(l.now, c)
}

func (l *lamport) seen() []uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.observed)
}

// TestClockCarried: with Config.Clock, every write of messages carries
// the sender's clock at that moment, and the receiver observes it before
// the messages are delivered; a receiver without a Clock ignores it.
func TestClockCarried(t *testing.T) {
	clocks := map[raft.NodeID]*lamport{1: {now: 41}, 2: {now: 7}}
	var atDelivery []uint64
	var mu sync.Mutex
	ns := cluster(t, []raft.NodeID{1, 2, 3}, func(c *Config) {
		if l := clocks[c.ID]; l != nil {
			c.Clock = l
		}
		if c.ID == 2 {
			in := c.Deliver
			c.Deliver = func(m replica.Message) {
				mu.Lock()
				atDelivery = append(atDelivery, clocks[2].Stamp())
				mu.Unlock()
				in(m)
			}
		}
	})
	ns[1].tr.Send([]replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 1, To: 2, Term: 1}}})
	waitFor(t, "delivery to 2", ns[2].in.changed, func() bool { return ns[2].in.count() == 1 })
	if got := clocks[2].seen(); !slices.Equal(got, []uint64{41}) {
		t.Fatalf("node 2 observed %v, want [41]", got)
	}
	mu.Lock()
	if !slices.Equal(atDelivery, []uint64{41}) {
		t.Fatalf("node 2's clock at delivery %v, want [41]: observed before the messages", atDelivery)
	}
	mu.Unlock()
	// Node 2's clock is now 41; what it sends carries it. Node 3 has no
	// clock and reads the frame without a complaint.
	clocks[1].mu.Lock()
	clocks[1].now = 50
	clocks[1].mu.Unlock()
	ns[2].tr.Send([]replica.Message{{Message: raft.Message{Type: raft.MsgVoteResp, From: 2, To: 1, Term: 1}},
		{Message: raft.Message{Type: raft.MsgVoteResp, From: 2, To: 3, Term: 1}}})
	ns[1].tr.Send([]replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 1, To: 3, Term: 1}}})
	waitFor(t, "delivery to 1", ns[1].in.changed, func() bool { return ns[1].in.count() == 1 })
	waitFor(t, "delivery to 3", ns[3].in.changed, func() bool { return ns[3].in.count() == 2 })
	if got := clocks[1].seen(); !slices.Equal(got, []uint64{41}) {
		t.Fatalf("node 1 observed %v, want [41]", got)
	}
	if st := ns[3].tr.Stats(); st.BadFrames.Load() != 0 {
		t.Fatalf("node 3 counted %d bad frames", st.BadFrames.Load())
	}
}

// TestBatching: messages queued while the writer is busy leave together:
// far fewer writes than messages.
func TestBatching(t *testing.T) {
	ns := cluster(t, []raft.NodeID{1, 2}, nil)
	const n = 5000
	for k := 0; k < n; k++ {
		ns[1].tr.Send([]replica.Message{{Message: raft.Message{Type: raft.MsgAppResp, From: 1, To: 2, Term: 1, Success: true, MatchIndex: uint64(k)}}})
	}
	// Every message arrives or is dropped and counted: a failed write's, or
	// beyond the queue's bound while the first connection is still being
	// made (under load; leaving these out timed the test out there).
	waitFor(t, "every message", ns[2].in.changed, func() bool {
		st := ns[1].tr.Stats()
		return ns[2].in.count()+int(st.DroppedWriteFailed.Load()+st.DroppedQueueFull.Load()) == n
	})
	st := ns[1].tr.Stats().Snapshot()
	if st.Writes*10 > st.MessagesSent {
		t.Fatalf("%d writes for %d messages: not batched", st.Writes, st.MessagesSent)
	}
	t.Logf("%d messages in %d writes, %d frames", st.MessagesSent, st.Writes, st.FramesSent)
}

// TestSendNeverBlocks: a peer that is down: Send returns at once, the queue
// stays bounded, the drops are counted.
func TestSendNeverBlocks(t *testing.T) {
	l := listen(t)
	dead := listen(t)
	deadAddr := dead.Addr().String()
	dead.Close()
	in := newInbox()
	tr, err := New(Config{ID: 1, ClusterID: 1, Peers: map[raft.NodeID]string{1: l.Addr().String(), 2: deadAddr}, Listener: l,
		Deliver: in.deliver, Logger: quiet, QueueMessagesMax: 100})
	if err != nil {
		t.Fatal(err)
	}
	tr.Start()
	defer tr.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := 0; k < 100000; k++ {
			tr.Send([]replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 1, To: 2, Term: 1}}})
		}
		tr.Send([]replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 1, To: 9, Term: 1}}})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Send blocked")
	}
	st := tr.Stats().Snapshot()
	if st.DroppedQueueFull+st.DroppedWriteFailed < 100000-100 || st.DroppedUnknownPeer != 1 {
		t.Fatalf("drops not counted: %+v", st)
	}
	for _, p := range tr.Peers() {
		if p.Queued > 100 {
			t.Fatalf("queue of %d over its bound", p.Queued)
		}
	}
}

// TestReconnect: the peer goes away and comes back on the same address;
// the sender reconnects after its backoff and delivers again.
func TestReconnect(t *testing.T) {
	ns := cluster(t, []raft.NodeID{1, 2}, nil)
	vote := []replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 1, To: 2, Term: 1}}}
	ns[1].tr.Send(vote)
	waitFor(t, "first delivery", ns[2].in.changed, func() bool { return ns[2].in.count() == 1 })
	addr := ns[2].tr.Addr().String()
	ns[2].tr.Close()
	waitFor(t, "disconnect seen", nil, func() bool { return !ns[1].tr.Peers()[0].Connected })
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen again on %s: %v", addr, err)
	}
	in := newInbox()
	tr2, err := New(Config{ID: 2, ClusterID: 0xc1, Peers: map[raft.NodeID]string{1: ns[1].tr.Addr().String(), 2: addr}, Listener: l, Deliver: in.deliver, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	tr2.Start()
	defer tr2.Close()
	waitFor(t, "reconnect", nil, func() bool { return ns[1].tr.Peers()[0].Connected })
	waitFor(t, "delivery after reconnect", in.changed, func() bool {
		ns[1].tr.Send(vote) // the protocol retries; so does the test
		return in.count() > 0
	})
}

// TestHandshakeRefusals: another cluster id, a node id not in the cluster,
// and a hello meant for another node are refused, counted, and the dialer
// says why.
func TestHandshakeRefusals(t *testing.T) {
	ns := cluster(t, []raft.NodeID{1, 2}, nil)
	target := ns[2].tr
	rows := []struct {
		name     string
		id       raft.NodeID
		cluster  uint64
		dialsFor raft.NodeID
		want     string
	}{
		{"wrong cluster", 1, 0xbad, 2, "cluster id"},
		{"not a member", 7, 0xc1, 2, "not a peer"},
		{"own id", 2, 0xc1, 3, "not a peer"},
		{"meant for another", 1, 0xc1, 3, "not node 3"},
	}
	for _, r := range rows {
		before := target.Stats().HandshakesRefused.Load()
		l := listen(t)
		tr, err := New(Config{ID: r.id, ClusterID: r.cluster, Peers: map[raft.NodeID]string{r.id: l.Addr().String(), r.dialsFor: target.Addr().String()},
			Listener: l, Deliver: func(replica.Message) {}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		tr.Start()
		waitFor(t, r.name, nil, func() bool {
			ps := tr.Peers()
			return target.Stats().HandshakesRefused.Load() > before && len(ps) == 1 && strings.Contains(ps[0].LastError, r.want)
		})
		if ps := tr.Peers(); ps[0].Connected {
			t.Fatalf("%s: connected", r.name)
		}
		tr.Close()
	}
	if ns[2].in.count() != 0 {
		t.Fatal("a refused peer's message was delivered")
	}
}

// rawPeer dials t and shakes hands as node from.
func rawPeer(t *testing.T, tr *Transport, from raft.NodeID) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", tr.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(wire.AppendFrame(nil, FrameHello, hello{ClusterID: 0xc1, From: uint64(from), To: uint64(tr.cfg.ID)}.encode())); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	f, err := wire.NewReader(br, 1024).Read()
	if err != nil || f.Type != FrameAck {
		t.Fatalf("handshake: %v %d", err, f.Type)
	}
	return c, br
}

// closed reports whether the other side closed c (within 10s).
func closed(c net.Conn, br *bufio.Reader) bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := br.ReadByte()
	return err == io.EOF || (err != nil && !isTimeout(err))
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestBadFramesClose: every kind of bad input after a good handshake closes
// the connection and is counted; nothing is delivered; the transport keeps
// serving good peers.
func TestBadFramesClose(t *testing.T) {
	// Node 3 is a member that never runs: the raw connections speak as it,
	// so that no real peer's reconnection replaces them.
	ns := cluster(t, []raft.NodeID{1, 2}, func(c *Config) {
		peers := map[raft.NodeID]string{3: "127.0.0.1:1"}
		for id, a := range c.Peers {
			peers[id] = a
		}
		c.Peers = peers
	})
	tr := ns[2].tr
	good, _ := EncodeBatch(nil, []replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 3, To: 2, Term: 1}}})
	wrongFrom, _ := EncodeBatch(nil, []replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 1, To: 2, Term: 1}}})
	badRecord, _ := EncodeBatch(nil, []replica.Message{func() replica.Message {
		m := appMessage(1, 0, 1)
		m.From, m.To = 3, 2
		m.Records[0] = append(wal_Record(m.Records[0]), 0)
		return m
	}()})
	flip := wire.AppendFrame(nil, FrameMessages, good)
	flip[len(flip)-1] ^= 0xff
	oversized := []byte{wire.Version, FrameMessages, 0, 0}
	oversized = binary.LittleEndian.AppendUint32(oversized, 1<<30)
	rows := []struct {
		name    string
		b       []byte
		counter func() uint64
	}{
		{"checksum", flip, tr.Stats().BadFrames.Load},
		{"oversized", oversized, tr.Stats().BadFrames.Load},
		{"version", append([]byte{9}, wire.AppendFrame(nil, FrameMessages, good)[1:]...), tr.Stats().BadFrames.Load},
		{"unknown type", wire.AppendFrame(nil, 77, good), tr.Stats().BadFrames.Load},
		{"garbage payload", wire.AppendFrame(nil, FrameMessages, []byte{1, 0, 0, 0, 0xff}), tr.Stats().BadMessages.Load},
		{"wrong sender", wire.AppendFrame(nil, FrameMessages, wrongFrom), tr.Stats().BadMessages.Load},
		{"bad record", wire.AppendFrame(nil, FrameMessages, badRecord), tr.Stats().BadMessages.Load},
		{"short clock", wire.AppendFrame(nil, FrameClock, []byte{1, 2, 3}), tr.Stats().BadFrames.Load},
	}
	for _, r := range rows {
		before := r.counter()
		c, br := rawPeer(t, tr, 3)
		if _, err := c.Write(r.b); err != nil {
			t.Fatal(err)
		}
		if !closed(c, br) {
			t.Fatalf("%s: connection not closed", r.name)
		}
		waitFor(t, r.name+" counted", nil, func() bool { return r.counter() > before })
		c.Close()
	}
	// Garbage instead of a hello, and a hello that never comes.
	for _, b := range [][]byte{[]byte("GET / HTTP/1.1\r\n\r\n"), {wire.Version, FrameHello, 0, 0, 0xff, 0xff, 0, 0}} {
		c, err := net.Dial("tcp", tr.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(b)
		if !closed(c, bufio.NewReader(c)) {
			t.Fatalf("%q: not closed", b)
		}
		c.Close()
	}
	if n := ns[2].in.count(); n != 0 {
		t.Fatalf("%d messages delivered from bad connections", n)
	}
	ns[1].tr.Send([]replica.Message{{Message: raft.Message{Type: raft.MsgVote, From: 1, To: 2, Term: 1}}})
	waitFor(t, "good peer still served", ns[2].in.changed, func() bool { return ns[2].in.count() == 1 })
}

func wal_Record(b []byte) []byte { return append([]byte(nil), b...) }
