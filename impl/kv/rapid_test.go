package kv_test

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kv/kvtest"
)

// model is the plain specification the store is checked against: a map of
// keys, a map of sessions each with a map of answers, expiry by scanning
// every session. No heap, no sorted slices, no hash.
type model struct {
	items    map[string]modelItem
	sessions map[uint64]*modelSession
	clock    uint64
}

type modelItem struct {
	value    string
	revision uint64
}

type modelSession struct {
	timeout, last, floor uint64
	answers              map[uint64]kv.Result
}

func newModel() *model {
	return &model{items: map[string]modelItem{}, sessions: map[uint64]*modelSession{}}
}

func (m *model) apply(index uint64, c kv.Command) kv.Result {
	if c.TimeMs > m.clock {
		m.clock = c.TimeMs
		for id, s := range m.sessions {
			if s.last+s.timeout < m.clock {
				delete(m.sessions, id)
			}
		}
	}
	s := m.sessions[c.Session]
	switch c.Op {
	case kv.OpNoop:
		return ok(index)
	case kv.OpRegister:
		if len(m.sessions) >= kv.SessionsMax {
			return code(kv.CodeSessionLimit, index)
		}
		m.sessions[index] = &modelSession{timeout: c.TimeoutMs, last: m.clock, floor: 1, answers: map[uint64]kv.Result{}}
		return ok(index)
	case kv.OpKeepAlive, kv.OpClose:
		if s == nil {
			return code(kv.CodeSessionExpired, index)
		}
		if c.Op == kv.OpClose {
			delete(m.sessions, c.Session)
		} else {
			s.touch(m.clock, c.LowestUnacked)
		}
		return ok(index)
	}
	if c.Session == 0 {
		return m.write(index, c)
	}
	if s == nil {
		return code(kv.CodeSessionExpired, index)
	}
	s.touch(m.clock, c.LowestUnacked)
	if c.Seq < s.floor {
		return code(kv.CodeStale, index)
	}
	if a, ok := s.answers[c.Seq]; ok {
		return a
	}
	if c.Seq >= s.floor+kv.SessionWindowMax {
		return code(kv.CodeWindowFull, index)
	}
	a := m.write(index, c)
	s.answers[c.Seq] = a
	return a
}

func (s *modelSession) touch(now, floor uint64) {
	s.last = now
	if floor > s.floor {
		s.floor = floor
		maps.DeleteFunc(s.answers, func(seq uint64, _ kv.Result) bool { return seq < floor })
	}
}

func (m *model) write(index uint64, c kv.Command) kv.Result {
	cur, present := m.items[string(c.Key)]
	switch {
	case c.Op == kv.OpCASValue && (!present || cur.value != string(c.ValueExpected)),
		c.Op == kv.OpCASRevision && cur.revision != c.RevisionExpected,
		c.Op == kv.OpDeleteIfRevision && cur.revision != c.RevisionExpected:
		return mismatch(index, cur.revision)
	case c.Op == kv.OpDelete && !present:
		return notFound(index)
	case c.Op == kv.OpDelete || c.Op == kv.OpDeleteIfRevision:
		delete(m.items, string(c.Key))
		return ok(index)
	}
	m.items[string(c.Key)] = modelItem{string(c.Value), index}
	return okRev(index)
}

// client is a generated client: its session and what it sent.
type client struct {
	session uint64
	nextSeq uint64
	sent    map[uint64]kv.Command // every request, as first sent
	pending map[uint64]bool       // sent, answer not received
	answers map[uint64][][]byte
}

func (c *client) lowestUnacked() uint64 {
	if len(c.pending) == 0 {
		return c.nextSeq
	}
	return slices.Min(slices.Collect(maps.Keys(c.pending)))
}

// machine is the rapid state machine: the store under test applied through
// the bytes, a twin applied through ApplyCommand, and the model.
type machine struct {
	st, twin *kv.Store
	m        *model
	clients  []*client
	log      []kvtest.Applied
	now      uint64
}

var (
	genKey   = rapid.SampledFrom([]string{"a", "b", "c"})
	genValue = rapid.SampledFrom([]string{"", "x", "y"})
)

func (mc *machine) step(t *rapid.T, c kv.Command) kv.Result {
	index := mc.st.AppliedIndex() + 1
	data, err := c.Marshal()
	if err != nil {
		t.Fatalf("generated an invalid command %v: %v", c, err)
	}
	return mc.stepData(t, index, data, &c)
}

// stepData applies data (c is its decoding, nil if it is bad) to the store,
// the twin and the model, and compares the answers.
func (mc *machine) stepData(t *rapid.T, index uint64, data []byte, c *kv.Command) kv.Result {
	out := mc.st.Apply(index, 1, data)
	mc.log = append(mc.log, kvtest.Applied{Index: index, Term: 1, Data: data, Result: bytes.Clone(out)})
	got, err := kv.DecodeResult(out)
	if err != nil {
		t.Fatalf("result: %v", err)
	}
	var want kv.Result
	if c == nil {
		want = mc.twin.ApplyData(index, 1, data)
		if want.Code != kv.CodeBadCommand {
			t.Fatalf("bad bytes %x answered %v", data, want)
		}
	} else {
		if twin := mc.twin.ApplyCommand(index, 1, *c); twin != got {
			t.Fatalf("%v: Apply answered %v, ApplyCommand %v", c, got, twin)
		}
		want = mc.m.apply(index, *c)
	}
	if got != want {
		t.Fatalf("entry %d %v: store answered %v, model %v", index, c, got, want)
	}
	return got
}

func (mc *machine) time(t *rapid.T) uint64 {
	// Mostly forward, sometimes a leader whose clock is behind.
	mc.now += rapid.Uint64Range(0, 400).Draw(t, "dt")
	if rapid.IntRange(0, 9).Draw(t, "behind") == 0 {
		return mc.now - min(mc.now, 300)
	}
	return mc.now
}

func (mc *machine) pickClient(t *rapid.T) *client {
	if len(mc.clients) == 0 {
		return nil
	}
	return mc.clients[rapid.IntRange(0, len(mc.clients)-1).Draw(t, "client")]
}

func (mc *machine) genWrite(t *rapid.T) kv.Command {
	key := []byte(genKey.Draw(t, "key"))
	value := []byte(genValue.Draw(t, "value"))
	switch rapid.IntRange(0, 4).Draw(t, "op") {
	case 0:
		return kv.Put(key, value)
	case 1:
		return kv.Delete(key)
	case 2:
		return kv.CASValue(key, []byte(genValue.Draw(t, "expected")), value)
	case 3:
		return kv.CASRevision(key, mc.revisionGuess(t, key), value)
	}
	return kv.DeleteIfRevision(key, max(1, mc.revisionGuess(t, key)))
}

// revisionGuess is the key's current revision, or a near miss.
func (mc *machine) revisionGuess(t *rapid.T, key []byte) uint64 {
	_, rev, _ := mc.st.Get(key)
	return rev + uint64(rapid.SampledFrom([]int{0, 0, 0, 1}).Draw(t, "revision-miss"))
}

func (mc *machine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"register":              mc.actionRegister,
		"write-without-session": mc.actionWriteWithoutSession,
		"write":                 mc.actionWrite,
		"retry":                 mc.actionRetry,
		"ack":                   mc.actionAck,
		"keep-alive":            mc.actionKeepAlive,
		"close":                 mc.actionClose,
		"unknown-session":       mc.actionUnknownSession,
		"tick":                  mc.actionTick,
		"empty-entry":           mc.actionEmptyEntry,
		"bad-entry":             mc.actionBadEntry,
		"snapshot-restore":      mc.actionSnapshotRestore,
		"restore-damaged":       mc.actionRestoreDamaged,
		"":                      mc.check,
	}
}

func (mc *machine) actionRegister(t *rapid.T) {
	timeout := rapid.SampledFrom([]uint64{200, 800, 3000}).Draw(t, "timeout")
	if r := mc.step(t, kv.Register(timeout).At(mc.time(t))); r.Code == kv.CodeOK {
		mc.clients = append(mc.clients, &client{session: r.Index, nextSeq: 1, sent: map[uint64]kv.Command{},
			pending: map[uint64]bool{}, answers: map[uint64][][]byte{}})
	}
}

func (mc *machine) actionWriteWithoutSession(t *rapid.T) { mc.step(t, mc.genWrite(t).At(mc.time(t))) }

func (mc *machine) actionWrite(t *rapid.T) {
	cl := mc.pickClient(t)
	if cl == nil {
		t.Skip("no client")
	}
	if rapid.IntRange(0, 30).Draw(t, "jump") == 0 {
		cl.nextSeq += kv.SessionWindowMax - 2 // reach the window's edge
	}
	seq := cl.nextSeq
	cl.nextSeq++
	cl.pending[seq] = true
	c := mc.genWrite(t).InSession(cl.session, seq, cl.lowestUnacked())
	cl.sent[seq] = c
	mc.step(t, c.At(mc.time(t)))
}

func (mc *machine) actionRetry(t *rapid.T) {
	cl := mc.pickClient(t)
	if cl == nil || len(cl.sent) == 0 {
		t.Skip("nothing sent")
	}
	seqs := slices.Sorted(maps.Keys(cl.sent))
	seq := rapid.SampledFrom(seqs).Draw(t, "seq")
	c := cl.sent[seq]
	if cl.pending[seq] {
		c.LowestUnacked = cl.lowestUnacked() // a client's retry; otherwise a delayed duplicate
	}
	mc.step(t, c.At(mc.time(t)))
}

func (mc *machine) actionAck(t *rapid.T) {
	cl := mc.pickClient(t)
	if cl == nil || len(cl.pending) == 0 {
		t.Skip("nothing pending")
	}
	seq := rapid.SampledFrom(slices.Sorted(maps.Keys(cl.pending))).Draw(t, "seq")
	// The client receives the answer of its latest attempt: the
	// last entry carrying the request.
	for i := len(mc.log) - 1; i >= 0; i-- {
		c, err := kv.DecodeCommand(mc.log[i].Data)
		if err == nil && c.Session == cl.session && c.Seq == seq {
			cl.answers[seq] = append(cl.answers[seq], mc.log[i].Result)
			break
		}
	}
	delete(cl.pending, seq)
}

func (mc *machine) actionKeepAlive(t *rapid.T) {
	if cl := mc.pickClient(t); cl != nil {
		mc.step(t, kv.KeepAlive(cl.session, cl.lowestUnacked()).At(mc.time(t)))
	}
}

func (mc *machine) actionClose(t *rapid.T) {
	if cl := mc.pickClient(t); cl != nil && rapid.IntRange(0, 3).Draw(t, "really") == 0 {
		mc.step(t, kv.Close(cl.session).At(mc.time(t)))
	}
}

func (mc *machine) actionUnknownSession(t *rapid.T) {
	id := mc.st.AppliedIndex() + rapid.Uint64Range(1, 5).Draw(t, "id")
	mc.step(t, mc.genWrite(t).InSession(id, 1, 1).At(mc.time(t)))
}

func (mc *machine) actionTick(t *rapid.T) {
	mc.now += rapid.Uint64Range(0, 2000).Draw(t, "idle")
	mc.step(t, kv.Noop().At(mc.now))
}

func (mc *machine) actionEmptyEntry(t *rapid.T) {
	mc.stepData(t, mc.st.AppliedIndex()+1, nil, &kv.Command{Op: kv.OpNoop})
}

func (mc *machine) actionBadEntry(t *rapid.T) {
	good, _ := mc.genWrite(t).Marshal()
	bad := rapid.SliceOfN(rapid.Byte(), 0, 60).Draw(t, "garbage")
	if rapid.Bool().Draw(t, "mutate") {
		bad = bytes.Clone(good)
		bad[rapid.IntRange(0, 1).Draw(t, "at")] ^= rapid.Byte().Filter(func(b byte) bool { return b != 0 }).Draw(t, "flip")
	}
	c, err := kv.DecodeCommand(bad)
	if len(bad) == 0 {
		c, err = kv.Noop(), nil // the core's empty entry
	}
	if err == nil {
		mc.stepData(t, mc.st.AppliedIndex()+1, bad, &c)
		return
	}
	mc.stepData(t, mc.st.AppliedIndex()+1, bad, nil)
}

func (mc *machine) actionSnapshotRestore(t *rapid.T) {
	snap := snapshot(t, mc.st)
	fresh, twin := kv.NewStore(kv.Options{}), kv.NewStore(kv.Options{})
	if err := fresh.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if err := twin.Restore(bytes.NewReader(snapshot(t, mc.twin))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshot(t, fresh), snap) || fresh.Hash() != mc.st.Hash() || twin.Hash() != mc.st.Hash() {
		t.Fatal("the restored store differs")
	}
	mc.st, mc.twin = fresh, twin
}

func (mc *machine) actionRestoreDamaged(t *rapid.T) {
	snap := snapshot(t, mc.st)
	if rapid.Bool().Draw(t, "truncate") {
		snap = snap[:rapid.IntRange(0, len(snap)-1).Draw(t, "cut")]
	} else {
		snap[rapid.IntRange(0, len(snap)-1).Draw(t, "byte")] ^= 1 << rapid.IntRange(0, 7).Draw(t, "bit")
	}
	hash, index := mc.st.Hash(), mc.st.AppliedIndex()
	if err := mc.st.Restore(bytes.NewReader(snap)); err == nil {
		t.Fatal("a damaged snapshot restored")
	}
	if mc.st.Hash() != hash || mc.st.AppliedIndex() != index {
		t.Fatal("a refused restore changed the store")
	}
}

// check compares the store with the model and runs Verify (the incremental
// hash against one from scratch, every invariant).
func (mc *machine) check(t *rapid.T) {
	if err := mc.st.Verify(); err != nil {
		t.Fatal(err)
	}
	if mc.st.Hash() != mc.twin.Hash() {
		t.Fatalf("hash %016x, twin %016x", mc.st.Hash(), mc.twin.Hash())
	}
	if mc.st.Len() != len(mc.m.items) || mc.st.ClockMs() != mc.m.clock || mc.st.SessionCount() != len(mc.m.sessions) {
		t.Fatalf("%d keys, clock %d, %d sessions; model %d, %d, %d", mc.st.Len(), mc.st.ClockMs(), mc.st.SessionCount(),
			len(mc.m.items), mc.m.clock, len(mc.m.sessions))
	}
	for key, want := range mc.m.items {
		value, rev, found := mc.st.Get([]byte(key))
		if !found || string(value) != want.value || rev != want.revision {
			t.Fatalf("key %q: %q@%d %v, model %q@%d", key, value, rev, found, want.value, want.revision)
		}
	}
	for id, s := range mc.m.sessions {
		info, found := mc.st.Session(id)
		want := kv.SessionInfo{ID: id, TimeoutMs: s.timeout, LastActiveMs: s.last, LowestUnacked: s.floor, Responses: len(s.answers)}
		if !found || info != want {
			t.Fatalf("session %d: %+v, model %+v", id, info, want)
		}
	}
}

// TestStoreAgainstModel: rapid generates histories of writes with and without
// sessions, retries, delayed duplicates, acknowledgments, keep-alives,
// closes, clock jumps (forward and back), bad entries, snapshots and damaged
// snapshots; after every step the store answers as the model does, equals
// the model's state, and its incremental hash equals the hash from scratch.
// At the end the at-most-once checker accepts the history, and a different
// log that leaves the same state (equivalentLog) gives the same hash and
// snapshot.
func TestStoreAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mc := &machine{st: kv.NewStore(kv.Options{}), twin: kv.NewStore(kv.Options{}), m: newModel()}
		t.Repeat(mc.actions())
		var reqs []kvtest.Request
		for _, cl := range mc.clients {
			for seq := range cl.sent {
				reqs = append(reqs, kvtest.Request{Session: cl.session, Seq: seq, Answers: cl.answers[seq]})
			}
		}
		if _, err := kvtest.CheckAtMostOnce(mc.log, reqs, mc.st); err != nil {
			t.Fatal(err)
		}
		// Another log that leaves the same state: the same hash, the same snapshot.
		other := kv.NewStore(kv.Options{})
		for i, data := range equivalentLog(t, mc.log) {
			other.Apply(uint64(i)+1, 1, data)
		}
		if other.Hash() != mc.st.Hash() || !bytes.Equal(snapshot(t, other), snapshot(t, mc.st)) {
			t.Fatalf("an equivalent log leaves hash %016x, the history %016x", other.Hash(), mc.st.Hash())
		}
	})
}

// equivalentLog rewrites a history into a different log that leaves the
// same state: every write answered without executing on a live session (a
// retry from the session, a stale duplicate, one beyond the window) becomes
// a keep-alive with the same time and lowest unacknowledged sequence number;
// every write refused for its session, and every write without a session
// that changed nothing, a no-op at the same time; every bad entry an empty
// one.
func equivalentLog(t *rapid.T, log []kvtest.Applied) [][]byte {
	var out [][]byte
	for _, e := range log {
		res, _ := kv.DecodeResult(e.Result)
		c, err := kv.DecodeCommand(e.Data)
		var repl kv.Command
		switch {
		case len(e.Data) == 0 || err != nil:
			out = append(out, nil)
			continue
		case !c.Op.IsWrite():
			out = append(out, e.Data)
			continue
		case c.Session != 0 && res.Code == kv.CodeSessionExpired:
			repl = kv.Noop().At(c.TimeMs)
		case c.Session != 0 && (res.Index != e.Index || !res.Code.Executed()):
			repl = kv.KeepAlive(c.Session, c.LowestUnacked).At(c.TimeMs)
		case c.Session == 0 && res.Code != kv.CodeOK:
			repl = kv.Noop().At(c.TimeMs)
		default:
			out = append(out, e.Data)
			continue
		}
		b, err := repl.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}
