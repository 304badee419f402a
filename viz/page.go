package viz

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/durableraft/durableraft/trace"
)

// Page is what a run's page draws: the trace's events, the messages
// reconstructed from them, and what the checks found. It is written into
// the page as JSON; the short field names keep a 10^5-event page small.
//
// Indexes: a node is 1-based into Names (0: none, votedFor's Nil); an
// event is 0-based into Events, Init excluded; a message is 0-based into
// Msgs.
type Page struct {
	Title   string        `json:"title"`
	Files   []string      `json:"files"`
	Version int           `json:"version"`
	Config  *trace.Config `json:"config"`
	Names   []string      `json:"names"`
	Actions []string      `json:"actions"` // Event.Action indexes this table
	Events  []Event       `json:"events"`
	Msgs    []Msg         `json:"msgs"`
	// Merged: the events come from several files (one per node and boot,
	// as raftd writes them), put in an order where every receive follows
	// its send; the run's real interleaving is not in the files.
	Merged bool `json:"merged,omitempty"`
	// ByClock: the merge followed the files' logical clocks (every line
	// has one), so the order is the run's own order of causes and effects.
	ByClock bool `json:"byClock,omitempty"`
	// Check is the trace checker's verdict (spec.CheckTrace), when run.
	Check *Check `json:"check,omitempty"`
	// Inv is what the invariants say along the run, when the trace could
	// be replayed through the explorer's model.
	Inv   *InvReport `json:"inv,omitempty"`
	Stats Stats      `json:"stats"`
	Notes []string   `json:"notes,omitempty"`
}

// Event is one step of the run.
type Event struct {
	Seq    int    `json:"q"`           // seq in its file
	File   int    `json:"f,omitempty"` // index into Page.Files
	Action int    `json:"a"`           // index into Page.Actions
	Node   int    `json:"n,omitempty"`
	Peer   int    `json:"p,omitempty"`
	Branch string `json:"b,omitempty"`
	Value  *int   `json:"v,omitempty"`
	Cut    *int   `json:"c,omitempty"`
	State  *State `json:"s,omitempty"`
	// In is the message (id+1) the step handles, and InKind how: "c"
	// consumed, "h" handled and left in the bag (UpdateTerm, append,
	// conflict, return-to-follower), "x" dropped, "d" duplicated.
	In     int    `json:"i,omitempty"`
	InKind string `json:"ik,omitempty"`
	Out    []int  `json:"o,omitempty"` // the messages it sends
}

// State is a node's post-state. Pointers are fields the trace does not log.
type State struct {
	Term     int `json:"t"`
	Role     int `json:"r"` // 0 Follower, 1 Candidate, 2 Leader
	VotedFor int `json:"vf,omitempty"`
	// Keep and Append are the log change since the node's previous state
	// (version 2's logKeep and logAppend; computed for version 1): the
	// log keeps Keep entries and appends the runs [term, value...]. Len is
	// the log's length after.
	Keep           int     `json:"k"`
	Append         [][]int `json:"la,omitempty"`
	Len            int     `json:"len"`
	Commit         int     `json:"ci"`
	Durable        *int    `json:"d,omitempty"`
	Learned        *int    `json:"lc,omitempty"`
	Verdict        string  `json:"vd,omitempty"`
	TruncatedAt    *int    `json:"ta,omitempty"`
	VotesResponded *[]int  `json:"vr,omitempty"`
	VotesGranted   *[]int  `json:"vg,omitempty"`
	NextIndex      []int   `json:"ni,omitempty"` // by node, 0-based
	MatchIndex     []int   `json:"mi,omitempty"`
}

// Msg is one message of the bag, or one copy of it (a duplicate).
type Msg struct {
	Type         int     `json:"y"` // index into msgTypes
	Term         int     `json:"t"`
	From         int     `json:"fr"`
	To           int     `json:"to"`
	LastLogTerm  int     `json:"lt,omitempty"`
	LastLogIndex int     `json:"li,omitempty"`
	PrevLogIndex int     `json:"pi,omitempty"`
	PrevLogTerm  int     `json:"pt,omitempty"`
	Entries      [][]int `json:"e,omitempty"` // runs [term, value...]
	Commit       int     `json:"ci,omitempty"`
	LeaderCommit *int    `json:"lc,omitempty"`
	Granted      bool    `json:"g,omitempty"`
	Success      bool    `json:"ok,omitempty"`
	MatchIndex   int     `json:"mi,omitempty"`
	// Send is the event that sent it (-1: no event of the run did, a
	// receive without its send); DupAt the event (+1) that made this copy
	// of message Orig-1.
	Send  int `json:"s"`
	Orig  int `json:"og,omitempty"`
	DupAt int `json:"da,omitempty"`
	// Handled lists the events that handled it; End is the event where it
	// left the bag (-1: still in flight at the end), Dropped whether the
	// network dropped it there.
	Handled []int `json:"h,omitempty"`
	End     int   `json:"x"`
	Dropped bool  `json:"dr,omitempty"`
	// Approx: matched to its send by type, ends and term only, because the
	// content reconstructed from the send differs from what was received
	// (or the send's content could not be reconstructed).
	Approx bool `json:"ap,omitempty"`
	// Was is, for an approximate match, the content the send was rebuilt
	// with: where it differs from what was received, the message changed
	// on the way (a flipped bit the receiver did not refuse), or the
	// rebuild is not exact.
	Was *Msg `json:"was,omitempty"`
}

// Check is the trace checker's verdict.
type Check struct {
	OK     bool   `json:"ok"`
	Event  int    `json:"event"` // the rejected event's index in Events (-1: none)
	Reason string `json:"reason,omitempty"`
}

// Stats counts how the messages were matched.
type Stats struct {
	Messages  int `json:"messages"`
	Exact     int `json:"exact"`     // receives matched to a send by content
	Approx    int `json:"approx"`    // by type, ends and term only
	Unmatched int `json:"unmatched"` // receives of a message no event sent
	Drops     int `json:"drops"`
	Dups      int `json:"dups"`
	InFlight  int `json:"inFlight"` // messages still in the bag at the end
}

var msgTypes = []string{"RequestVoteRequest", "RequestVoteResponse", "AppendEntriesRequest", "AppendEntriesResponse"}

var (
	//go:embed assets/run.html
	runHTML string
	//go:embed assets/common.css
	commonCSS string
	//go:embed assets/run.css
	runCSS string
	//go:embed assets/run.js
	runJS string
)

// WritePage writes the page of a run: the HTML with the styles, the
// script and the data inline.
func WritePage(w io.Writer, p *Page) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	parts := strings.Split(runHTML, "{{")
	for k, part := range parts {
		if k > 0 {
			name, rest, ok := strings.Cut(part, "}}")
			if !ok {
				return fmt.Errorf("viz: unterminated placeholder in run.html")
			}
			switch name {
			case "TITLE":
				bw.WriteString(htmlEscape(p.Title))
			case "CSS":
				bw.WriteString(commonCSS)
				bw.WriteString(runCSS)
			case "JS":
				bw.WriteString(runJS)
			case "DATA":
				enc := json.NewEncoder(bw) // escapes <, > and &: safe inside <script>
				if err := enc.Encode(p); err != nil {
					return fmt.Errorf("viz: encode page data: %w", err)
				}
			default:
				return fmt.Errorf("viz: unknown placeholder {{%s}} in run.html", name)
			}
			part = rest
		}
		bw.WriteString(part)
	}
	return bw.Flush()
}

func htmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")
	return r.Replace(s)
}
