package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/durableraft/durableraft/impl/raft"
)

// logCapture keeps each node's log lines (JSON) for tests that look for
// transition lines.
type logCapture struct {
	mu  sync.Mutex
	buf map[raft.NodeID]*bytes.Buffer
}

func newLogCapture() *logCapture { return &logCapture{buf: map[raft.NodeID]*bytes.Buffer{}} }

type captureWriter struct {
	c  *logCapture
	id raft.NodeID
}

func (w captureWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	b := w.c.buf[w.id]
	if b == nil {
		b = &bytes.Buffer{}
		w.c.buf[w.id] = b
	}
	return b.Write(p)
}

// logger is a debug-level JSON logger into node id's buffer.
func (c *logCapture) logger(id raft.NodeID) *slog.Logger {
	return slog.New(slog.NewJSONHandler(captureWriter{c, id}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lines returns node id's lines whose message starts with msg.
func (c *logCapture) lines(t *testing.T, id raft.NodeID, msg string) []map[string]any {
	t.Helper()
	c.mu.Lock()
	data := append([]byte(nil), c.buf[id].Bytes()...)
	c.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("node %d: a log line is not JSON: %q", id, sc.Text())
		}
		if s, _ := m["msg"].(string); strings.HasPrefix(s, msg) {
			out = append(out, m)
		}
	}
	return out
}

// one returns the one line of node id starting with msg, failing when
// there is not exactly one.
func (c *logCapture) one(t *testing.T, id raft.NodeID, msg string) map[string]any {
	t.Helper()
	ls := c.lines(t, id, msg)
	if len(ls) != 1 {
		t.Fatalf("node %d: %d lines %q, want exactly one: %v", id, len(ls), msg, ls)
	}
	return ls[0]
}

// num reads a numeric field of a JSON log line.
func num(t *testing.T, line map[string]any, key string) uint64 {
	t.Helper()
	v, ok := line[key].(float64)
	if !ok {
		t.Fatalf("line %v has no number %q", line, key)
	}
	return uint64(v)
}
