package spec

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/durableraft/durableraft/trace"
)

// traceDriver writes a version 2 trace by taking chosen steps of the trace
// checker's own machine: long runs, with 64-bit state and long logs,
// without an implementation.
type traceDriver struct {
	tb     testing.TB
	m      *traceMachine
	s      *TraceState
	w      *trace.Writer
	logged [MaxServers + 1]RunLog
	events int
}

func newTraceDriver(tb testing.TB, b *bytes.Buffer, c *trace.Config) *traceDriver {
	m, err := newTraceMachine(c)
	if err != nil {
		tb.Fatal(err)
	}
	d := &traceDriver{tb: tb, m: m, s: m.Init(), w: trace.NewWriter(b)}
	d.write(trace.Event{Action: "Init", Config: c})
	return d
}

func (d *traceDriver) write(e trace.Event) {
	if err := d.w.Write(e); err != nil {
		d.tb.Fatal(err)
	}
	d.events++
}

// do takes step l, which must have exactly one successor, and writes its
// event with the node's log change.
func (d *traceDriver) do(l traceLabel) {
	d.tb.Helper()
	var got []traceLabel
	var next TraceState
	d.m.Step(d.s, l, func(n TraceState, gl traceLabel) { got, next = append(got, gl), n })
	if len(got) != 1 {
		d.tb.Fatalf("event %d: %v has %d successors", d.events, l, len(got))
	}
	d.s = &next
	e := d.m.event(got[0], d.s)
	i := got[0].I
	prev, cur := d.logged[i], d.s.Log[i]
	keep := cur.Len()
	if k := prev.firstDifference(cur); k > 0 {
		keep = k - 1
	}
	e.State.LogKeep = &keep
	e.State.LogAppend = trace.Runs(traceEntries(cur.SubSeq(keep+1, cur.Len())))
	d.logged[i] = cur
	d.write(e)
}

// receive takes action a on the one message of type t from j to i.
func (d *traceDriver) receive(a Action, t MType, j, i ServerID, b Branch) {
	d.tb.Helper()
	for _, be := range d.s.Messages {
		if be.M.Mtype == t && be.M.Msource == j && be.M.Mdest == i {
			d.do(traceLabel{Action: a, I: i, J: j, Msg: be.M, Branch: b})
			return
		}
	}
	d.tb.Fatalf("event %d: no %v from %v to %v in the bag", d.events, t, j, i)
}

// longTrace is a production-profile run of three servers: timeouts
// elections that s1 times out (at least one), then entries replicated
// one by one, each flushed, acknowledged and committed, for about events
// events.
func longTrace(tb testing.TB, events, timeouts int) []byte {
	var b bytes.Buffer
	d := newTraceDriver(tb, &b, &trace.Config{Profile: "durable", Servers: 3, Values: 4,
		Crashes: 1 << 40, Corruptions: 1 << 40, Production: true, Source: "test"})
	for range max(timeouts, 1) {
		d.do(traceLabel{Action: ActTimeout, I: 1})
	}
	for j := ServerID(1); j <= 3; j++ {
		d.do(traceLabel{Action: ActRequestVote, I: 1, J: j})
	}
	d.receive(ActHandleRequestVoteRequest, RequestVoteRequest, 1, 1, 0)
	d.do(traceLabel{Action: ActPersist, I: 1}) // the term and the vote durable: the requests leave
	for _, j := range []ServerID{2, 3} {
		d.receive(ActUpdateTerm, RequestVoteRequest, 1, j, 0)
		d.receive(ActHandleRequestVoteRequest, RequestVoteRequest, 1, j, 0)
		d.do(traceLabel{Action: ActPersist, I: j})
	}
	d.receive(ActHandleRequestVoteResponse, RequestVoteResponse, 1, 1, 0)
	d.receive(ActHandleRequestVoteResponse, RequestVoteResponse, 2, 1, 0)
	d.receive(ActDropMessage, RequestVoteResponse, 3, 1, 0)
	d.do(traceLabel{Action: ActBecomeLeader, I: 1})
	for k := 1; d.events < events; k++ {
		d.do(traceLabel{Action: ActClientRequest, I: 1, Value: uint8(1 + k%4)})
		for _, j := range []ServerID{2, 3} {
			d.do(traceLabel{Action: ActSendAppendEntries, I: 1, J: j, Msg: d.m.appendEntriesRange(d.s, 1, j, k-1, k)})
			d.receive(ActHandleAppendEntriesBatch, AppendEntriesRequest, 1, j, BranchAppend)
			d.do(traceLabel{Action: ActFlush, I: j})
			d.receive(ActHandleAppendEntriesBatch, AppendEntriesRequest, 1, j, BranchAlreadyDone)
		}
		d.do(traceLabel{Action: ActFlush, I: 1})
		d.receive(ActHandleAppendEntriesResponseMax, AppendEntriesResponse, 2, 1, 0)
		d.receive(ActHandleAppendEntriesResponseMax, AppendEntriesResponse, 3, 1, 0)
		d.do(traceLabel{Action: ActAdvanceCommitIndex, I: 1})
	}
	if err := d.w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// TestCheckTraceLong: a run with terms and logs beyond 8 bits (term 301,
// logs of ~600 entries) is accepted, and one protocol field changed in one
// late event is rejected at that event, with a readable diff of the long
// log.
func TestCheckTraceLong(t *testing.T) {
	data := longTrace(t, 8000, 300)
	n, err := CheckTraceReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the spec's own run is rejected after %d events: %v", n, err)
	}
	if n < 8000 || !bytes.Contains(data, []byte(`"mterm":301`)) {
		t.Fatalf("%d events, or no term 301", n)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	last := func(action string) int {
		for k := len(lines) - 1; k > 0; k-- {
			if strings.Contains(lines[k], `"action":"`+action+`"`) && strings.Contains(lines[k], `"logAppend"`) {
				return k
			}
		}
		t.Fatalf("no %s event with a logAppend", action)
		return 0
	}
	k := last("HandleAppendEntriesBatch")
	for name, tc := range map[string]struct {
		old, new string
		reason   string
	}{
		"appended value": {`"values":[`, `"values":[9`, "differs"},
		"commit index":   {`"commitIndex":`, `"commitIndex":1`, "differs"},
		"message field":  {`"mprevLogTerm":`, `"mprevLogTerm":7`, "no such message"},
	} {
		t.Run(name, func(t *testing.T) {
			mutated := append([]string(nil), lines...)
			mutated[k] = strings.Replace(mutated[k], tc.old, tc.new, 1)
			if mutated[k] == lines[k] {
				t.Fatal("no change")
			}
			_, err := CheckTraceReader(strings.NewReader(strings.Join(mutated, "\n") + "\n"))
			var mm *TraceMismatch
			if !errors.As(err, &mm) || mm.Seq != k || !strings.Contains(mm.Reason, tc.reason) {
				t.Fatalf("got %v, want a mismatch at event %d (%s)", err, k, tc.reason)
			}
			if name == "appended value" && !strings.Contains(err.Error(), "entries, [") {
				t.Errorf("the diff does not show the long logs by length and first difference:\n%v", err)
			}
			t.Logf("%s: %v", name, firstLine(err.Error()))
		})
	}
}

var benchTrace = sync.OnceValue(func() []byte { return longTrace(&testing.B{}, 100000, 1) })

// BenchmarkCheckTrace100k checks a run of 10^5 events (logs of ~7,700
// entries) from its ndjson: decoding and checking together, as
// raftspec check-trace does.
func BenchmarkCheckTrace100k(b *testing.B) {
	data := benchTrace()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		n, err := CheckTraceReader(bytes.NewReader(data))
		if err != nil || n < 100000 {
			b.Fatalf("%d events: %v", n, err)
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
	}
}
