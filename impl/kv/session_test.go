package kv_test

import (
	"testing"

	"github.com/durableraft/durableraft/impl/kv"
)

// The session decision table (docs/kv.md), row by row: a scenario that
// reaches the row, the answer it must give, the counter it moves, and what
// the row's test-only switch turns the answer into.
func TestSessionRows(t *testing.T) {
	const timeout = 1000
	type scenario struct {
		name  string
		setup func(r *replica) // from an empty store: session 1 registered at entry 1, time 0
		c     kv.Command       // the request under test
		want  func(at uint64) kv.Result
		stat  func(kv.Stats) uint64
		bug   kv.Bug
		buggy func(at uint64) kv.Result // the answer with bug on (0: no switch)
	}
	put := kv.Put(k, v)
	rows := []scenario{
		{"S1 no-session", func(r *replica) {}, put, okRev, func(s kv.Stats) uint64 { return s.NoSession }, 0, nil},
		{"S2 unknown-or-expired: never registered", func(r *replica) {}, put.InSession(99, 1, 1),
			func(at uint64) kv.Result { return code(kv.CodeSessionExpired, at) }, func(s kv.Stats) uint64 { return s.SessionMisses },
			kv.BugExpiredReexecutes, okRev},
		{"S2 unknown-or-expired: expired", func(r *replica) { r.apply(put.InSession(1, 1, 1)) }, put.InSession(1, 1, 1).At(timeout + 1),
			func(at uint64) kv.Result { return code(kv.CodeSessionExpired, at) }, func(s kv.Stats) uint64 { return s.SessionMisses },
			kv.BugExpiredReexecutes, okRev},
		{"S2 unknown-or-expired: closed", func(r *replica) { r.apply(kv.Close(1)) }, put.InSession(1, 1, 1),
			func(at uint64) kv.Result { return code(kv.CodeSessionExpired, at) }, func(s kv.Stats) uint64 { return s.SessionMisses },
			kv.BugExpiredReexecutes, okRev},
		{"S3 below-lowest-unacked", func(r *replica) { r.apply(put.InSession(1, 1, 1)); r.apply(put.InSession(1, 2, 2)) }, put.InSession(1, 1, 1),
			func(at uint64) kv.Result { return code(kv.CodeStale, at) }, func(s kv.Stats) uint64 { return s.Stale },
			kv.BugStaleReexecutes, okRev},
		{"S4 answered-before", func(r *replica) { r.apply(put.InSession(1, 1, 1)) }, put.InSession(1, 1, 1),
			func(at uint64) kv.Result { return okRev(2) }, func(s kv.Stats) uint64 { return s.Deduplicated },
			kv.BugNoDedup, okRev},
		{"S5 beyond-window", func(r *replica) {}, put.InSession(1, kv.SessionWindowMax+1, 1),
			func(at uint64) kv.Result { return code(kv.CodeWindowFull, at) }, func(s kv.Stats) uint64 { return s.WindowFull }, 0, nil},
		{"S6 new-in-window", func(r *replica) {}, put.InSession(1, kv.SessionWindowMax, 1), okRev, func(s kv.Stats) uint64 { return s.Kept }, 0, nil},
	}
	for _, sc := range rows {
		bugs := []kv.Bug{0}
		if sc.bug != 0 {
			bugs = append(bugs, sc.bug)
		}
		for _, bug := range bugs {
			name := sc.name
			if bug != 0 {
				name += "/" + bug.String()
			}
			t.Run(name, func(t *testing.T) {
				r := newReplica(t, bug)
				if res := r.apply(kv.Register(timeout)); res != ok(1) {
					t.Fatalf("register: %v", res)
				}
				sc.setup(r)
				before := sc.stat(r.store().Stats())
				at := r.next()
				want := sc.want(at)
				if bug != 0 {
					want = sc.buggy(at)
				}
				if got := r.apply(sc.c); got != want {
					t.Fatalf("%v: got %v, want %v", sc.c, got, want)
				}
				if after := sc.stat(r.store().Stats()); after != before+1 {
					t.Fatalf("the row's counter went from %d to %d", before, after)
				}
				r.verify()
			})
		}
	}
}

// A session's id is the index of its register entry; registering twice
// (the client's retry of a register) gives two sessions.
func TestRegister(t *testing.T) {
	r := newReplica(t, 0)
	r.apply(kv.Noop())
	if res := r.apply(kv.Register(50)); res != ok(2) {
		t.Fatalf("register: %v", res)
	}
	if res := r.apply(kv.Register(50)); res != ok(3) {
		t.Fatalf("register again: %v", res)
	}
	info, found := r.store().Session(2)
	if !found || info != (kv.SessionInfo{ID: 2, TimeoutMs: 50, LowestUnacked: 1}) || r.store().SessionCount() != 2 {
		t.Fatalf("session 2: %+v %v, %d sessions", info, found, r.store().SessionCount())
	}
	r.verify()
}

// Expiry by the leader-stamped time: a session lives while the clock is at
// most its last activity plus its timeout; activity (a request, a
// keep-alive) moves it; the clock never goes back, whatever a leader stamps.
func TestExpiry(t *testing.T) {
	r := newReplica(t, 0)
	r.apply(kv.Noop().At(1000))
	r.apply(kv.Register(100).At(1000)) // session 2, deadline 1100
	if res := r.apply(kv.Put(k, v).InSession(2, 1, 1).At(1100)); res != okRev(3) {
		t.Fatalf("at the deadline: %v", res) // deadline now 1200
	}
	r.apply(kv.Noop().At(900)) // a leader whose clock is behind: the clock stays at 1100
	if r.store().ClockMs() != 1100 {
		t.Fatalf("clock %d", r.store().ClockMs())
	}
	if res := r.apply(kv.KeepAlive(2, 0).At(1200)); res != ok(5) {
		t.Fatalf("keep-alive at the deadline: %v", res) // deadline now 1300
	}
	r.apply(kv.Noop().At(1300))
	if _, found := r.store().Session(2); !found {
		t.Fatal("expired at its deadline")
	}
	r.apply(kv.Noop().At(1301)) // a no-op moves the clock and expires
	if _, found := r.store().Session(2); found {
		t.Fatal("alive after its deadline")
	}
	if res := r.apply(kv.Put(k, v).InSession(2, 1, 1).At(1301)); res != code(kv.CodeSessionExpired, 8) {
		t.Fatalf("retry on the expired session: %v", res)
	}
	if res := r.apply(kv.KeepAlive(2, 0)); res != code(kv.CodeSessionExpired, 9) {
		t.Fatalf("keep-alive of the expired session: %v", res)
	}
	if s := r.store().Stats(); s.SessionsExpired != 1 {
		t.Fatalf("stats %+v", s)
	}
	r.verify()
}

// Sessions expire in (deadline, id) order, each at the first entry whose time passes its deadline.
func TestExpiryOrder(t *testing.T) {
	r := newReplica(t, 0)
	for i := range 20 {
		r.apply(kv.Register(uint64(100 + 10*(i%5))).At(1)) // sessions 1..20, deadlines 101..141
	}
	for now := uint64(100); now <= 142; now++ {
		r.apply(kv.Noop().At(now))
		for id := uint64(1); id <= 20; id++ {
			deadline := 1 + 100 + 10*((id-1)%5)
			if _, alive := r.store().Session(id); alive != (deadline >= now) {
				t.Fatalf("at %d session %d (deadline %d) alive=%v", now, id, deadline, alive)
			}
		}
		r.verify()
	}
}

// The lowest unacknowledged sequence number drops the answers below it,
// from a request or a keep-alive, and never goes back.
func TestWindowFloor(t *testing.T) {
	r := newReplica(t, 0)
	r.apply(kv.Register(1000))
	for seq := uint64(1); seq <= 5; seq++ {
		r.apply(kv.Put(k, v).InSession(1, seq, 1))
	}
	if info, _ := r.store().Session(1); info.Responses != 5 {
		t.Fatalf("%+v", info)
	}
	r.apply(kv.Put(k, v).InSession(1, 6, 4)) // acks 1..3
	if info, _ := r.store().Session(1); info.Responses != 3 || info.LowestUnacked != 4 {
		t.Fatalf("%+v", info)
	}
	r.apply(kv.Put(k, v).InSession(1, 7, 2)) // an old floor: no change
	if info, _ := r.store().Session(1); info.Responses != 4 || info.LowestUnacked != 4 {
		t.Fatalf("%+v", info)
	}
	r.apply(kv.KeepAlive(1, 7)) // acks up to 6
	if info, _ := r.store().Session(1); info.Responses != 1 || info.LowestUnacked != 7 {
		t.Fatalf("%+v", info)
	}
	if res := r.apply(kv.Put(k, v).InSession(1, 6, 4)); res.Code != kv.CodeStale {
		t.Fatalf("a retry of an acknowledged request: %v", res)
	}
	// The window: up to SessionWindowMax answers above the floor, no more.
	if res := r.apply(kv.Put(k, v).InSession(1, 7+kv.SessionWindowMax-1, 7)); res.Code != kv.CodeOK {
		t.Fatalf("the window's last seq: %v", res)
	}
	if res := r.apply(kv.Put(k, v).InSession(1, 7+kv.SessionWindowMax, 7)); res.Code != kv.CodeWindowFull {
		t.Fatalf("past the window: %v", res)
	}
	r.verify()
}

// A full window never keeps more than SessionWindowMax answers.
func TestWindowBound(t *testing.T) {
	r := newReplica(t, 0)
	r.apply(kv.Register(1000))
	for seq := uint64(1); seq <= 2*kv.SessionWindowMax; seq++ {
		r.apply(kv.Put(k, v).InSession(1, seq, 1))
	}
	if info, _ := r.store().Session(1); info.Responses != kv.SessionWindowMax {
		t.Fatalf("%+v", info)
	}
	r.verify()
}

func TestSessionLimit(t *testing.T) {
	r := newReplica(t, 0)
	for range kv.SessionsMax {
		if res := r.apply(kv.Register(10)); res.Code != kv.CodeOK {
			t.Fatalf("register: %v", res)
		}
	}
	if res := r.apply(kv.Register(10)); res.Code != kv.CodeSessionLimit {
		t.Fatalf("register past the limit: %v", res)
	}
	r.apply(kv.Close(1))
	if res := r.apply(kv.Register(10)); res.Code != kv.CodeOK {
		t.Fatalf("register after a close: %v", res)
	}
	r.apply(kv.Noop().At(11)) // every session expires
	if r.store().SessionCount() != 0 {
		t.Fatalf("%d sessions", r.store().SessionCount())
	}
	if s := r.store().Stats(); s.SessionLimit != 1 || s.SessionsExpired != kv.SessionsMax || s.SessionsClosed != 1 {
		t.Fatalf("stats %+v", s)
	}
	r.verify()
}

// Close drops the session's answers: a retry after it is refused, never re-executed.
func TestClose(t *testing.T) {
	r := newReplica(t, 0)
	r.apply(kv.Register(1000))
	r.apply(kv.Put(k, v).InSession(1, 1, 1))
	if res := r.apply(kv.Close(1)); res != ok(3) {
		t.Fatalf("close: %v", res)
	}
	if res := r.apply(kv.Close(1)); res.Code != kv.CodeSessionExpired {
		t.Fatalf("close again: %v", res)
	}
	if res := r.apply(kv.Put(k, v).InSession(1, 1, 1)); res.Code != kv.CodeSessionExpired {
		t.Fatalf("retry after close: %v", res)
	}
	if _, rev, _ := r.store().Get(k); rev != 2 {
		t.Fatalf("revision %d", rev)
	}
	r.verify()
}
