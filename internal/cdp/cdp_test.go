package cdp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// frame is a server's frame: unmasked, fin as given.
func frame(op byte, fin bool, payload []byte) []byte {
	b := []byte{op}
	if fin {
		b[0] |= 0x80
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n < 1<<16:
		b = append(b, 126, byte(n>>8), byte(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

// discard is a net.Conn whose writes go nowhere.
type discard struct{ net.Conn }

func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) Close() error                { return nil }

func reader(data []byte) *wsConn {
	return &wsConn{c: discard{}, br: bufio.NewReader(bytes.NewReader(data))}
}

func TestReadMessage(t *testing.T) {
	var in []byte
	in = append(in, frame(opText, false, []byte(`{"id":`))...)
	in = append(in, frame(opPing, true, []byte("p"))...) // between fragments
	in = append(in, frame(opCont, true, []byte(`1}`))...)
	in = append(in, frame(opText, true, bytes.Repeat([]byte("x"), 70000))...)
	in = append(in, frame(opClose, true, nil)...)
	w := reader(in)
	m, err := w.ReadMessage()
	if err != nil || string(m) != `{"id":1}` {
		t.Fatalf("%q, %v", m, err)
	}
	if m, err = w.ReadMessage(); err != nil || len(m) != 70000 {
		t.Fatalf("%d bytes, %v", len(m), err)
	}
	if _, err = w.ReadMessage(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("close: %v", err)
	}
	// A frame claiming more than the limit is refused before anything is
	// read; one claiming more than arrives ends with the input.
	huge := []byte{0x81, 127}
	huge = binary.BigEndian.AppendUint64(huge, 1<<40)
	if _, err := reader(huge).ReadMessage(); err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("huge: %v", err)
	}
	short := []byte{0x81, 127}
	short = binary.BigEndian.AppendUint64(short, 100<<20)
	if _, err := reader(append(short, "abc"...)).ReadMessage(); err == nil {
		t.Fatal("a frame longer than its input was read")
	}
}

// A client frame is masked, and its server reads it back.
func TestWriteMasked(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cl, sv := &wsConn{c: a, br: bufio.NewReader(a)}, &wsConn{c: b, br: bufio.NewReader(b)}
	msg := bytes.Repeat([]byte("hello "), 30000)
	go cl.WriteText(msg)
	got, err := sv.ReadMessage()
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
}

func FuzzReadMessage(f *testing.F) {
	f.Add(frame(opText, true, []byte(`{"id":1,"result":{}}`)))
	f.Add(append(frame(opBin, false, []byte("a")), frame(opCont, true, []byte("b"))...))
	f.Add([]byte{0x81, 0xfe, 0x00, 0x05, 1, 2, 3, 4, 'a', 'b', 'c', 'd', 'e'})
	f.Add([]byte{0x8f, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		w := reader(data)
		for k := 0; k < 100; k++ {
			m, err := w.ReadMessage()
			if err != nil {
				return
			}
			if len(m) > len(data) {
				t.Fatalf("a message of %d bytes from %d bytes of input", len(m), len(data))
			}
		}
	})
}

// fakeDevTools answers the commands the client sends, as Chromium would,
// on the server end of a pipe.
func fakeDevTools(t *testing.T, c net.Conn) {
	sv := &wsConn{c: c, br: bufio.NewReader(c)}
	for {
		raw, err := sv.ReadMessage()
		if err != nil {
			return
		}
		var m struct {
			ID        int64           `json:"id"`
			Method    string          `json:"method"`
			Params    json.RawMessage `json:"params"`
			SessionID string          `json:"sessionId"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Errorf("the client sent %q", raw)
			return
		}
		result := any(struct{}{})
		var event []byte
		switch m.Method {
		case "Target.createTarget":
			result = map[string]string{"targetId": "T1"}
		case "Target.attachToTarget":
			result = map[string]string{"sessionId": "S1"}
		case "Page.navigate":
			event, _ = json.Marshal(map[string]any{"method": "Page.loadEventFired", "sessionId": m.SessionID, "params": map[string]any{}})
		case "Runtime.evaluate":
			var p struct{ Expression string }
			json.Unmarshal(m.Params, &p)
			if p.Expression == "throw" {
				result = map[string]any{"result": map[string]any{}, "exceptionDetails": map[string]any{"text": "Uncaught"}}
			} else {
				result = map[string]any{"result": map[string]any{"value": len(p.Expression)}}
			}
		case "Fail.me":
			b, _ := json.Marshal(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "no such method"}})
			sv.writeFrame(opText, b, false)
			continue
		}
		b, _ := json.Marshal(map[string]any{"id": m.ID, "result": result})
		sv.writeFrame(opText, b, false)
		if event != nil {
			sv.writeFrame(opText, event, false)
		}
	}
}

// The protocol client against a fake browser: a page, navigation and its
// load event, evaluations from several goroutines, errors, a lost
// connection.
func TestProtocol(t *testing.T) {
	a, s := net.Pipe()
	go fakeDevTools(t, s)
	b := &Browser{conn: &wsConn{c: a, br: bufio.NewReader(a)}, pending: map[int64]chan reply{}, done: make(chan struct{})}
	go b.readLoop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := b.NewPage(ctx, 800, 600)
	if err != nil || p.session != "S1" {
		t.Fatalf("page %+v, %v", p, err)
	}
	if err := p.Navigate(ctx, "file:///x.html"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for k := 0; k < 8; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			expr := strings.Repeat("x", k+1)
			var n int
			if err := p.Eval(ctx, expr, &n); err != nil || n != k+1 {
				t.Errorf("eval %q: %d, %v", expr, n, err)
			}
		}(k)
	}
	wg.Wait()
	if err := p.Eval(ctx, "throw", nil); err == nil || !strings.Contains(err.Error(), "Uncaught") {
		t.Fatalf("an exception: %v", err)
	}
	if err := b.call(ctx, "", "Fail.me", nil, nil); err == nil || !strings.Contains(err.Error(), "no such method") {
		t.Fatalf("an error reply: %v", err)
	}
	s.Close()
	<-b.done
	if err := p.Eval(ctx, "1", nil); err == nil {
		t.Fatal("an evaluation after the connection was lost")
	}
}
