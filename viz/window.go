package viz

import (
	"strings"

	"github.com/durableraft/durableraft/trace"
)

// The production profile's persistence window (spec/window.go): a vote
// request or response, or an AppendEntries response, that a node sends
// while its hard state (term, vote, TRUNCATED mark) is not durable yet, or
// a suffix truncation is not, waits with the node until its next Persist,
// and only then is in the bag. A crash loses what waited.

type hardState struct{ term, vote, truncatedAt int }

type window struct {
	on        bool // the trace is of the production profile
	truncSync bool // with bug truncation-not-synced a truncation does not hold
	persisted []hardState
	trunc     []bool
	held      [][]int // message ids by node
}

func newWindow(c *trace.Config, nodes int) *window {
	w := &window{on: c.Production, persisted: make([]hardState, nodes+1), trunc: make([]bool, nodes+1), held: make([][]int, nodes+1)}
	w.truncSync = !strings.Contains(","+c.Bugs+",", ",truncation-not-synced,")
	for k := range w.persisted {
		w.persisted[k] = hardState{term: 1}
	}
	return w
}

func hardStateOf(s *State) hardState {
	h := hardState{term: s.Term, vote: s.VotedFor}
	if s.TruncatedAt != nil {
		h.truncatedAt = *s.TruncatedAt
	}
	return h
}

// step follows node n's window over an event with post-state post (nil if
// the event logs none) and pre-state pre; it returns the messages its
// Persist releases.
func (w *window) step(action string, n int, pre, post *State) []int {
	if !w.on || n <= 0 || post == nil {
		return nil
	}
	switch action {
	case "Crash", "Corrupt":
		w.persisted[n], w.trunc[n], w.held[n] = hardStateOf(post), false, nil
	case "Persist":
		out := w.held[n]
		w.persisted[n], w.trunc[n], w.held[n] = hardStateOf(post), false, nil
		return out
	default:
		preLen := 0
		if pre != nil {
			preLen = pre.Len
		}
		if w.truncSync && post.Keep < preLen {
			w.trunc[n] = true
		}
	}
	return nil
}

// holds reports whether message m, sent by node n in a step that left it
// in post, waits for n's Persist.
func (w *window) holds(n int, post *State, m *Msg) bool {
	if !w.on || n <= 0 || post == nil || m.To == m.From || m.Type == typeIndex("AppendEntriesRequest") {
		return false
	}
	return hardStateOf(post) != w.persisted[n] || w.trunc[n]
}
