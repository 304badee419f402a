package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/trace"
)

// traceSink writes the core's trace (raft.Config.Trace) to one ndjson file
// per boot, DIR/n<id>-<unix nanoseconds>.ndjson, starting with an Init
// line. Each event is flushed as it is written, on the replica's goroutine,
// before the Ready it belongs to is carried out.
//
// It keeps the node's logical (Lamport) clock: every event is stamped with
// the clock after adding one (trace.Event.Clock); the transport stamps
// every write of messages with the clock then (Stamp, transport.Clock) and
// raises the receiver's to at least the sender's (Observe) before the
// messages are stepped, so a receive's clock is above its send's. A boot
// resumes the clock from the tail of the node's latest trace in DIR, so
// that it grows across restarts.
type traceSink struct {
	mu    sync.Mutex
	f     *os.File
	w     *trace.Writer
	clock uint64
	err   error
}

func openTrace(dir string, id raft.NodeID, voters []raft.NodeID, bugs raft.Bug, repair bool) (*traceSink, error) {
	cfg, err := raft.TraceConfig(raft.TraceParams{Voters: voters, Bugs: bugs, Repair: repair})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	clock, err := resumeClock(dir, id)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("n%d-%d.ndjson", id, time.Now().UnixNano())), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	s := &traceSink{f: f, w: trace.NewWriter(f), clock: clock}
	s.Event(trace.Event{Action: "Init", Config: cfg})
	return s, s.err
}

// Event implements raft.TraceSink.
func (s *traceSink) Event(e trace.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	s.clock++
	e.Clock = s.clock
	if err := s.w.Write(e); err != nil {
		s.err = err
		return
	}
	s.err = s.w.Flush()
}

// Stamp implements transport.Clock.
func (s *traceSink) Stamp() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock
}

// Observe implements transport.Clock.
func (s *traceSink) Observe(c uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = max(s.clock, c)
}

func (s *traceSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.f.Close(); s.err == nil {
		s.err = err
	}
	return s.err
}

// traceTailBytes is how much of a trace's end resumeClock reads first; it
// doubles while no whole line with a clock is in it.
const traceTailBytes = 64 << 10

// resumeClock is the largest clock in the last whole lines of node id's
// latest trace in dir (boot order by the nanoseconds in the name), or of
// an earlier one when the latest has no clocked line (a kill inside its
// Init line); 0 when there is none. A torn last line (a kill inside it) is
// skipped: its event's effects never left the process.
func resumeClock(dir string, id raft.NodeID) (uint64, error) {
	paths, err := nodeTraces(dir, id)
	if err != nil {
		return 0, err
	}
	for k := len(paths) - 1; k >= 0; k-- {
		c, err := tailClock(paths[k])
		if err != nil {
			return 0, fmt.Errorf("server: resuming the trace clock from %s: %w", paths[k], err)
		}
		if c > 0 {
			return c, nil
		}
	}
	return 0, nil
}

// nodeTraces is node id's trace files in dir, in boot order.
func nodeTraces(dir string, id raft.NodeID) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type file struct {
		path string
		ns   int64
	}
	var files []file
	prefix := fmt.Sprintf("n%d-", id)
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ".ndjson") {
			continue
		}
		ns, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(name, prefix), ".ndjson"), 10, 64)
		if err != nil {
			continue // not a file raftd named
		}
		files = append(files, file{filepath.Join(dir, name), ns})
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.ns, b.ns) })
	out := make([]string, len(files))
	for k, f := range files {
		out[k] = f.path
	}
	return out, nil
}

// tailClock reads the end of a trace file, from traceTailBytes up to the
// whole file, until a whole line with a clock is in it.
func tailClock(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	for n := int64(traceTailBytes); ; n *= 2 {
		from := max(0, size-n)
		buf := make([]byte, size-from)
		if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if c := lastClock(buf, from > 0); c > 0 || from == 0 {
			return c, nil
		}
	}
}

// lastClock is the clock of the last whole line of buf that has one. With
// partial, buf's first line may be cut and is skipped; a last line without
// its newline is torn and skipped.
func lastClock(buf []byte, partial bool) uint64 {
	if partial {
		k := bytes.IndexByte(buf, '\n')
		if k < 0 {
			return 0
		}
		buf = buf[k+1:]
	}
	if k := bytes.LastIndexByte(buf, '\n'); k >= 0 {
		buf = buf[:k]
	} else {
		return 0
	}
	for len(buf) > 0 {
		line := buf
		if k := bytes.LastIndexByte(buf, '\n'); k >= 0 {
			line, buf = buf[k+1:], buf[:k]
		} else {
			buf = nil
		}
		var e struct {
			Clock uint64 `json:"clock"`
		}
		if json.Unmarshal(line, &e) == nil && e.Clock > 0 {
			return e.Clock
		}
	}
	return 0
}
