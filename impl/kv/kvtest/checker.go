package kvtest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/durableraft/durableraft/impl/kv"
)

// Applied is one entry of a replica's applied log, with the encoded answer
// its store gave.
type Applied struct {
	Index, Term uint64
	Data        []byte
	Result      []byte
}

// Recorder is a state machine that applies to Store and records what it
// applied: the runtime (or the simulator) drives it like the store itself.
type Recorder struct {
	Store *kv.Store
	Log   []Applied
}

// Apply applies an entry to the store and records it with its answer.
func (r *Recorder) Apply(index, term uint64, data []byte) []byte {
	res := r.Store.Apply(index, term, data)
	r.Log = append(r.Log, Applied{Index: index, Term: term, Data: bytes.Clone(data), Result: bytes.Clone(res)})
	return res
}

// Request is a client's record of one request of a session: its identity,
// and every answer the client received for any attempt of it.
type Request struct {
	Session, Seq uint64
	Answers      [][]byte
}

// Report counts what the checker saw.
type Report struct {
	Entries      int // entries checked
	Writes       int // write entries (attempts), with or without a session
	Executions   int // session requests executed (each at most once when the check passes)
	Deduplicated int // retries answered from the session
	Refused      int // writes refused (stale, expired session, window full)
}

func (r Report) String() string {
	return fmt.Sprintf("entries=%d writes=%d executions=%d deduplicated=%d refused=%d",
		r.Entries, r.Writes, r.Executions, r.Deduplicated, r.Refused)
}

type requestID struct{ session, seq uint64 }

type execution struct {
	index  uint64
	cmd    kv.Command
	result []byte
}

type modelItem struct {
	value    string
	revision uint64
}

// checker is one run of CheckAtMostOnce.
type checker struct {
	items      map[string]modelItem
	executions map[requestID]execution
	report     Report
	violations []string
}

const violationsMax = 20

func (c *checker) violate(format string, args ...any) {
	if len(c.violations) < violationsMax {
		c.violations = append(c.violations, fmt.Sprintf(format, args...))
	}
}

// CheckAtMostOnce checks that every request in log was applied at most once
// (the package comment lists the rules). log is one replica's applied log
// from index 1 on, in order; requests (nil: not checked) are what the
// clients sent and received; final (nil: not checked) is the store that
// applied exactly log. The error lists the first violations found.
func CheckAtMostOnce(log []Applied, requests []Request, final *kv.Store) (Report, error) {
	c := &checker{items: map[string]modelItem{}, executions: map[requestID]execution{}}
	for i, e := range log {
		if e.Index != uint64(i)+1 {
			return c.report, fmt.Errorf("kvtest: entry %d of the log has index %d: the log must run from index 1 without gaps", i, e.Index)
		}
		c.entry(e)
	}
	if requests != nil {
		c.requests(requests)
	}
	if final != nil {
		c.final(final, uint64(len(log)))
	}
	if len(c.violations) > 0 {
		return c.report, errors.New("kvtest: at-most-once violated:\n  " + strings.Join(c.violations, "\n  "))
	}
	return c.report, nil
}

func (c *checker) entry(e Applied) {
	c.report.Entries++
	res, err := kv.DecodeResult(e.Result)
	if err != nil {
		c.violate("entry %d: the answer does not decode: %v", e.Index, err)
		return
	}
	if res.Index > e.Index {
		c.violate("entry %d: answer %v from a later entry", e.Index, res)
		return
	}
	var cmd kv.Command
	if len(e.Data) > 0 {
		if cmd, err = kv.DecodeCommand(e.Data); err != nil {
			if res.Code != kv.CodeBadCommand || res.Index != e.Index {
				c.violate("entry %d: data that does not decode (%v) answered %v", e.Index, err, res)
			}
			return
		}
	}
	if !cmd.Op.IsWrite() {
		if res.Index != e.Index {
			c.violate("entry %d: %v answered from an earlier entry: %v", e.Index, cmd, res)
		}
		return
	}
	c.report.Writes++
	id := requestID{cmd.Session, cmd.Seq}
	switch {
	case res.Index < e.Index:
		c.fromSession(e, cmd, id, res)
	case res.Code.Executed():
		c.executed(e, cmd, id, res)
	default:
		c.report.Refused++
	}
}

// executed replays a write the answer says ran at this entry.
func (c *checker) executed(e Applied, cmd kv.Command, id requestID, res kv.Result) {
	want := c.apply(e.Index, cmd)
	if res.Code != want.Code || res.Revision != want.Revision {
		c.violate("entry %d: %v answered %v, but on the state the earlier executions leave it gives %v", e.Index, cmd, res, want)
	}
	if cmd.Session == 0 {
		return // at-least-once: a write without a session may run each time it is proposed
	}
	c.report.Executions++
	if first, ok := c.executions[id]; ok {
		c.violate("request session=%d seq=%d applied twice: at entry %d and again at entry %d (%v)", id.session, id.seq, first.index, e.Index, cmd)
		return
	}
	c.executions[id] = execution{index: e.Index, cmd: cmd, result: e.Result}
}

// fromSession checks an answer the store says it kept from an earlier execution.
func (c *checker) fromSession(e Applied, cmd kv.Command, id requestID, res kv.Result) {
	c.report.Deduplicated++
	first, ok := c.executions[id]
	switch {
	case cmd.Session == 0:
		c.violate("entry %d: a write without a session answered from entry %d", e.Index, res.Index)
	case !ok || first.index != res.Index:
		c.violate("entry %d: session=%d seq=%d answered from entry %d, which did not execute it", e.Index, id.session, id.seq, res.Index)
	case !sameRequest(first.cmd, cmd):
		c.violate("entry %d: session=%d seq=%d is %v, but entry %d executed %v under that sequence number", e.Index, id.session, id.seq, cmd, first.index, first.cmd)
	case !bytes.Equal(first.result, e.Result):
		c.violate("entry %d: the retry of session=%d seq=%d got %v, not its first answer", e.Index, id.session, id.seq, res)
	}
}

// sameRequest: the same write (the leader's time and the client's lowest
// unacknowledged sequence number may differ between attempts).
func sameRequest(a, b kv.Command) bool {
	return a.Op == b.Op && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Value, b.Value) &&
		bytes.Equal(a.ValueExpected, b.ValueExpected) && a.RevisionExpected == b.RevisionExpected
}

// apply executes a write on the checker's own map and says what it answers.
func (c *checker) apply(index uint64, cmd kv.Command) kv.Result {
	key := string(cmd.Key)
	cur, present := c.items[key]
	mismatch := kv.Result{Code: kv.CodeMismatch, Index: index, Revision: cur.revision}
	switch cmd.Op {
	case kv.OpCASValue:
		if !present || cur.value != string(cmd.ValueExpected) {
			return mismatch
		}
	case kv.OpCASRevision:
		if cur.revision != cmd.RevisionExpected {
			return mismatch
		}
	case kv.OpDelete, kv.OpDeleteIfRevision:
		if cmd.Op == kv.OpDeleteIfRevision && cur.revision != cmd.RevisionExpected {
			return mismatch
		}
		if !present {
			return kv.Result{Code: kv.CodeNotFound, Index: index}
		}
		delete(c.items, key)
		return kv.Result{Code: kv.CodeOK, Index: index}
	}
	c.items[key] = modelItem{value: string(cmd.Value), revision: index}
	return kv.Result{Code: kv.CodeOK, Index: index, Revision: index}
}

// requests checks the clients' side: every answer received is the first
// answer or a refusal, and every request applied was sent.
func (c *checker) requests(requests []Request) {
	sent := map[requestID]bool{}
	for _, r := range requests {
		id := requestID{r.Session, r.Seq}
		sent[id] = true
		first, executed := c.executions[id]
		for _, a := range r.Answers {
			res, err := kv.DecodeResult(a)
			switch {
			case err != nil:
				c.violate("session=%d seq=%d: the client's answer does not decode: %v", id.session, id.seq, err)
			case !res.Code.Executed():
			case !executed:
				c.violate("session=%d seq=%d: the client got %v, but the log never executed the request", id.session, id.seq, res)
			case !bytes.Equal(a, first.result):
				c.violate("session=%d seq=%d: the client got %v, not the answer of its execution at entry %d", id.session, id.seq, res, first.index)
			}
		}
	}
	var unsent []execution
	for id, ex := range c.executions {
		if !sent[id] {
			unsent = append(unsent, ex)
		}
	}
	slices.SortFunc(unsent, func(a, b execution) int { return cmp.Compare(a.index, b.index) }) // a reproducible report
	for _, ex := range unsent {
		c.violate("entry %d executed session=%d seq=%d, which no client sent", ex.index, ex.cmd.Session, ex.cmd.Seq)
	}
}

// final compares the store's state with the state the executions leave.
func (c *checker) final(st *kv.Store, last uint64) {
	if st.AppliedIndex() != last {
		c.violate("the final store is at index %d, the log ends at %d", st.AppliedIndex(), last)
		return
	}
	seen := 0
	st.Range(func(key, value []byte, revision uint64) bool {
		seen++
		want, ok := c.items[string(key)]
		if !ok || want.value != string(value) || want.revision != revision {
			c.violate("key %q is %q at revision %d in the store, but the executions leave %q at %d (present %v): a write took effect that no answer claims",
				key, clip(value), revision, clip([]byte(want.value)), want.revision, ok)
		}
		return true
	})
	if seen != len(c.items) {
		c.violate("the store has %d keys, the executions leave %d", seen, len(c.items))
	}
}

func clip(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}
