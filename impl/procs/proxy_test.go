package procs

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/durableraft/durableraft/impl/wire"
)

func helloFrom(from, to uint64) []byte {
	b, start := wire.BeginFrame(nil, 1)
	b = binary.LittleEndian.AppendUint64(b, 7)
	b = binary.LittleEndian.AppendUint64(b, from)
	b = binary.LittleEndian.AppendUint64(b, to)
	b = binary.LittleEndian.AppendUint32(b, 0)
	return wire.FinishFrame(b, start)
}

// proxied starts a proxy in front of one listener (node 2) and returns
// the proxy and the listener behind it.
func proxied(t *testing.T) (*Proxy, net.Listener, string) {
	t.Helper()
	back, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Close() })
	front, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{ID: 2, PeerAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(front)), ListenPeer: back.Addr().String()}
	p, err := newProxy([]*Node{n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, back, n.PeerAddr
}

// dial connects as node from, sends its hello and data, and returns the
// connection.
func dial(t *testing.T, addr string, from uint64, data string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(append(helloFrom(from, 2), data...)); err != nil {
		t.Fatal(err)
	}
	return c
}

// receive accepts one connection behind the proxy and reads the hello and
// n bytes after it; the connection stays open until the test ends.
func receive(t *testing.T, back net.Listener, n int) (string, time.Time) {
	t.Helper()
	c, err := back.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, len(helloFrom(1, 2))+n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	return string(b[len(b)-n:]), time.Now()
}

// TestProxyRelaysAndCuts: bytes pass through; a cut link closes its live
// connection and refuses new ones at the hello while another link passes;
// healed, it passes again; a delay holds bytes at least that long.
func TestProxyRelaysAndCuts(t *testing.T) {
	p, back, addr := proxied(t)
	c := dial(t, addr, 1, "abc")
	if got, _ := receive(t, back, 3); got != "abc" {
		t.Fatalf("relayed %q", got)
	}
	p.Set(1, 2, Rule{Drop: true})
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a live connection of a cut link stayed open")
	}
	c.Close()
	c = dial(t, addr, 1, "x")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a new connection of a cut link was not closed")
	}
	c.Close()
	c3 := dial(t, addr, 3, "ok") // node 3's link to 2 is not cut
	if got, _ := receive(t, back, 2); got != "ok" {
		t.Fatalf("the other link relayed %q", got)
	}
	c3.Close()
	if refused, cut := p.Counts(); refused != 1 || cut != 1 {
		t.Fatalf("refused %d cut %d", refused, cut)
	}
	p.HealAll()
	p.Set(1, 2, Rule{Delay: 150 * time.Millisecond})
	sent := time.Now()
	c = dial(t, addr, 1, "late")
	defer c.Close()
	got, at := receive(t, back, 4)
	if got != "late" || at.Sub(sent) < 150*time.Millisecond {
		t.Fatalf("delayed %q arrived after %v", got, at.Sub(sent))
	}
}

// TestFreePortNeverRepeats: the ports FreePort hands out are distinct,
// though the OS may offer a port it just closed again.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
