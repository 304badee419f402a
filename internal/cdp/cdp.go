package cdp

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Find returns the Chromium to run: $CHROMIUM, or the first of chromium,
// chromium-browser, google-chrome on $PATH.
func Find() (string, bool) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, true
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// Browser is a running headless Chromium.
type Browser struct {
	cmd  *exec.Cmd
	dir  string
	conn *wsConn

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply
	waiters []*waiter
	err     error
	done    chan struct{}
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type message struct {
	ID        int64           `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
	reply
}

// waiter is someone waiting for an event of a session.
type waiter struct {
	session, method string
	ch              chan json.RawMessage
}

// Start runs Chromium headless with a fresh profile and the flags of a
// sealed test machine (no network services of its own), and connects to
// its DevTools endpoint.
func Start(ctx context.Context, path string) (*Browser, error) {
	dir, err := os.MkdirTemp("", "cdp-profile-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir="+dir, "--remote-debugging-port=0", "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	b := &Browser{cmd: cmd, dir: dir, pending: map[int64]chan reply{}, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var seen []string
		for sc.Scan() {
			line := sc.Text()
			if u, ok := strings.CutPrefix(line, "DevTools listening on "); ok {
				found <- strings.TrimSpace(u)
				io.Copy(io.Discard, stderr)
				return
			}
			if len(seen) < 20 {
				seen = append(seen, line)
			}
		}
		found <- "exited: " + strings.Join(seen, "\n")
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-ctx.Done():
		b.kill()
		return nil, fmt.Errorf("cdp: chromium did not start: %w", ctx.Err())
	case <-time.After(30 * time.Second):
		b.kill()
		return nil, errors.New("cdp: chromium did not print its DevTools address in 30 s")
	}
	if !strings.HasPrefix(wsURL, "ws://") {
		b.kill()
		return nil, fmt.Errorf("cdp: chromium %s", wsURL)
	}
	if b.conn, err = wsDial(wsURL, 10*time.Second); err != nil {
		b.kill()
		return nil, err
	}
	go b.readLoop()
	return b, nil
}

func (b *Browser) kill() {
	if b.cmd.Process != nil {
		b.cmd.Process.Kill()
		b.cmd.Wait()
	}
	os.RemoveAll(b.dir)
}

// Close ends the browser.
func (b *Browser) Close() {
	if b.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		b.call(ctx, "", "Browser.close", nil, nil)
		cancel()
		b.conn.Close()
	}
	done := make(chan struct{})
	go func() { b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		b.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(b.dir)
}

func (b *Browser) readLoop() {
	defer close(b.done)
	for {
		raw, err := b.conn.ReadMessage()
		if err != nil {
			b.mu.Lock()
			b.err = err
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var m message
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch := b.pending[m.ID]; ch != nil {
				ch <- m.reply
				delete(b.pending, m.ID)
			}
		} else if m.Method != "" {
			kept := b.waiters[:0]
			for _, w := range b.waiters {
				if w.method == m.Method && w.session == m.SessionID {
					w.ch <- m.Params
					continue
				}
				kept = append(kept, w)
			}
			b.waiters = kept
		}
		b.mu.Unlock()
	}
}

// call sends a command (to a page's session, or the browser's when
// session is "") and decodes its result into out.
func (b *Browser) call(ctx context.Context, session, method string, params, out any) error {
	if params == nil {
		params = struct{}{}
	}
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return b.err
	}
	b.nextID++
	id := b.nextID
	ch := make(chan reply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if err := b.conn.WriteText(raw); err != nil {
		return err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("cdp: %s: connection lost: %v", method, b.err)
		}
		if r.Error != nil {
			return fmt.Errorf("cdp: %s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("cdp: %s: %w", method, ctx.Err())
	}
}

// expect registers interest in the next event of a session before the
// command that causes it is sent.
func (b *Browser) expect(session, method string) chan json.RawMessage {
	w := &waiter{session: session, method: method, ch: make(chan json.RawMessage, 1)}
	b.mu.Lock()
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	return w.ch
}

// Page is one tab.
type Page struct {
	b       *Browser
	session string
}

// NewPage opens a tab of width × height CSS pixels.
func (b *Browser) NewPage(ctx context.Context, width, height int) (*Page, error) {
	var t struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &t); err != nil {
		return nil, err
	}
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": t.TargetID, "flatten": true}, &s); err != nil {
		return nil, err
	}
	p := &Page{b: b, session: s.SessionID}
	for _, m := range []string{"Page.enable", "Runtime.enable"} {
		if err := p.call(ctx, m, nil, nil); err != nil {
			return nil, err
		}
	}
	err := p.call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return p, err
}

func (p *Page) call(ctx context.Context, method string, params, out any) error {
	return p.b.call(ctx, p.session, method, params, out)
}

// Navigate loads url and waits for its load event.
func (p *Page) Navigate(ctx context.Context, url string) error {
	loaded := p.b.expect(p.session, "Page.loadEventFired")
	var r struct {
		ErrorText string `json:"errorText"`
	}
	if err := p.call(ctx, "Page.navigate", map[string]any{"url": url}, &r); err != nil {
		return err
	}
	if r.ErrorText != "" {
		return fmt.Errorf("cdp: navigate to %s: %s", url, r.ErrorText)
	}
	select {
	case <-loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cdp: %s did not load: %w", url, ctx.Err())
	}
}

// Eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its value into out (nil: ignore it). A thrown exception is an error.
func (p *Page) Eval(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if ex := r.ExceptionDetails; ex != nil {
		msg := ex.Text
		if ex.Exception != nil {
			msg += " " + ex.Exception.Description
		}
		return fmt.Errorf("cdp: %s: %s", expr, msg)
	}
	if out != nil && len(r.Result.Value) > 0 {
		return json.Unmarshal(r.Result.Value, out)
	}
	return nil
}

// Key presses and releases a key (a DOM key name such as "ArrowDown").
func (p *Page) Key(ctx context.Context, key string) error {
	for _, typ := range []string{"keyDown", "keyUp"} {
		if err := p.call(ctx, "Input.dispatchKeyEvent", map[string]any{"type": typ, "key": key, "code": key}, nil); err != nil {
			return err
		}
	}
	return nil
}

// Click presses the left mouse button at (x, y) CSS pixels.
func (p *Page) Click(ctx context.Context, x, y float64) error {
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		if err := p.call(ctx, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1}, nil); err != nil {
			return err
		}
	}
	return nil
}

// Screenshot returns a PNG of the viewport.
func (p *Page) Screenshot(ctx context.Context) ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := p.call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &r); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(r.Data)
}
