package server

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/trace"
)

// traceSink writes the core's trace (raft.Config.Trace) to one ndjson file
// per boot, DIR/n<id>-<unix nanoseconds>.ndjson, starting with an Init
// line. Each event is flushed as it is written, on the replica's goroutine,
// before the Ready it belongs to is carried out. Merging the nodes' files
// (logical clocks, the network's steps) is issue 15's.
type traceSink struct {
	mu  sync.Mutex
	f   *os.File
	w   *trace.Writer
	err error
}

func openTrace(dir string, id raft.NodeID, voters []raft.NodeID, bugs raft.Bug) (*traceSink, error) {
	cfg, err := raft.TraceConfig(raft.TraceParams{Voters: voters, Bugs: bugs})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("n%d-%d.ndjson", id, time.Now().UnixNano())), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	s := &traceSink{f: f, w: trace.NewWriter(f)}
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
	if err := s.w.Write(e); err != nil {
		s.err = err
		return
	}
	s.err = s.w.Flush()
}

func (s *traceSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.f.Close(); s.err == nil {
		s.err = err
	}
	return s.err
}
