package cdp

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// wsConn is the client side of a WebSocket (RFC 6455), as much of it as
// the DevTools protocol needs: text messages, fragmentation, ping and
// close. Frames the client sends are masked, as the RFC requires.
type wsConn struct {
	c   net.Conn
	br  *bufio.Reader
	wmu sync.Mutex
}

// wsDial opens a WebSocket to a ws:// URL.
func wsDial(rawURL string, timeout time.Duration) (*wsConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "ws" {
		return nil, fmt.Errorf("cdp: not a ws:// URL: %q", rawURL)
	}
	c, err := net.DialTimeout("tcp", u.Host, timeout)
	if err != nil {
		return nil, err
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		c.Close()
		return nil, err
	}
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("cdp: websocket handshake: %w", err)
	}
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.StatusCode != http.StatusSwitchingProtocols ||
		resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(h[:]) {
		c.Close()
		return nil, fmt.Errorf("cdp: websocket handshake refused: %s", resp.Status)
	}
	c.SetDeadline(time.Time{})
	return &wsConn{c: c, br: br}, nil
}

const (
	opCont  = 0x0
	opText  = 0x1
	opBin   = 0x2
	opClose = 0x8
	opPing  = 0x9
	opPong  = 0xA
	// maxMessage bounds one message (a screenshot of a large page is a
	// few MB of base64).
	maxMessage = 256 << 20
)

// write sends one frame, masked as a client's must be.
func (w *wsConn) write(op byte, payload []byte) error { return w.writeFrame(op, payload, true) }

// writeFrame sends one frame; mask is false only for a server's (tests).
func (w *wsConn) writeFrame(op byte, payload []byte, masked bool) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	hdr := []byte{0x80 | op}
	n := len(payload)
	bit := byte(0)
	if masked {
		bit = 0x80
	}
	switch {
	case n < 126:
		hdr = append(hdr, bit|byte(n))
	case n < 1<<16:
		hdr = append(hdr, bit|126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, bit|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	if masked {
		if _, err := rand.Read(mask[:]); err != nil {
			return err
		}
		hdr = append(hdr, mask[:]...)
	}
	buf := make([]byte, len(hdr)+n)
	copy(buf, hdr)
	for k, b := range payload {
		buf[len(hdr)+k] = b ^ mask[k%4]
	}
	_, err := w.c.Write(buf)
	return err
}

// WriteText sends a text message.
func (w *wsConn) WriteText(b []byte) error { return w.write(opText, b) }

// ReadMessage returns the next text or binary message, answering pings.
func (w *wsConn) ReadMessage() ([]byte, error) {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.br, h[:]); err != nil {
			return nil, err
		}
		fin, op := h[0]&0x80 != 0, h[0]&0x0f
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		var mask []byte
		if h[1]&0x80 != 0 {
			mask = make([]byte, 4)
			if _, err := io.ReadFull(w.br, mask); err != nil {
				return nil, err
			}
		}
		if n > maxMessage || uint64(len(msg))+n > maxMessage {
			return nil, fmt.Errorf("cdp: websocket message over %d bytes", maxMessage)
		}
		// Read what arrives, never more: a frame's length is the peer's
		// claim, not an allocation.
		var pb bytes.Buffer
		if _, err := io.CopyN(&pb, w.br, int64(n)); err != nil {
			return nil, err
		}
		payload := pb.Bytes()
		if mask != nil {
			for k := range payload {
				payload[k] ^= mask[k%4]
			}
		}
		switch op {
		case opPing:
			if err := w.write(opPong, payload); err != nil {
				return nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			return nil, errors.New("cdp: websocket closed by the browser")
		case opText, opBin, opCont:
			msg = append(msg, payload...)
			if fin {
				return msg, nil
			}
		default:
			return nil, fmt.Errorf("cdp: websocket opcode %#x", op)
		}
	}
}

// Close closes the connection.
func (w *wsConn) Close() error {
	w.write(opClose, nil)
	return w.c.Close()
}
