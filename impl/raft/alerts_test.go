package raft

import (
	"regexp"
	"strconv"
	"testing"
)

// suppressedRe reads the count of a rate limiter's summary alert.
var suppressedRe = regexp.MustCompile(`(\d+) more suppressed`)

// floodAccount counts the alerts of kind in a Ready and the events they
// account for: one per alert, or the count a summary reports.
func floodAccount(t *testing.T, rd Ready, kind AlertKind) (alerts, events int) {
	t.Helper()
	for _, a := range rd.Alerts {
		if a.Kind != kind {
			continue
		}
		alerts++
		if m := suppressedRe.FindStringSubmatch(a.Text); m != nil {
			k, _ := strconv.Atoi(m[1]) // a summary: the events it stands for
			events += k
		} else {
			events++
		}
	}
	return alerts, events
}

// TestAlertFloodRateLimited: conditions a peer or storage can trigger on
// every message are reported once per AlertTicks per kind, and a summary
// says how many were suppressed, so none goes unaccounted. A leader whose
// log was compacted below a follower's position fails to read for it on
// every rejection (AlertStorage), and a follower that acknowledges beyond
// the leader's log does so on every response (AlertProtocol). Before the
// limiter: one alert per message, 2 per tick here.
func TestAlertFloodRateLimited(t *testing.T) {
	st := logOf(1, 1, 2)
	if err := st.Compact(2); err != nil {
		t.Fatal(err)
	}
	n := mustNode(t, testConfig(1, st, 1, 2, 3), Boot{HardState: HardState{Term: 2}, Verdict: VerdictClean})
	if err := n.Campaign(); err != nil {
		t.Fatal(err)
	}
	if err := n.Step(Message{Type: MsgVoteResp, From: 2, To: 1, Term: 3, Granted: true}); err != nil || n.Status().Role != RoleLeader {
		t.Fatalf("not leader: %v", err)
	}
	n.Ready()
	rounds := 5 * n.cfg.AlertTicks
	var storageAlerts, storageEvents, protocolAlerts, protocolEvents int
	for k := 0; k < rounds; k++ {
		n.Tick()
		// n2 lags below the compaction base: every rejection makes the
		// leader read compacted entries for it.
		if err := n.Step(Message{Type: MsgAppResp, From: 2, To: 1, Term: 3, Seq: uint64(1000 + k)}); err != nil {
			t.Fatal(err)
		}
		// n3 acknowledges an index the leader does not have.
		if err := n.Step(Message{Type: MsgAppResp, From: 3, To: 1, Term: 3, Success: true, MatchIndex: 99, Seq: uint64(1000 + k)}); err != nil {
			t.Fatal(err)
		}
		rd := n.Ready()
		a, e := floodAccount(t, rd, AlertStorage)
		storageAlerts, storageEvents = storageAlerts+a, storageEvents+e
		a, e = floodAccount(t, rd, AlertProtocol)
		protocolAlerts, protocolEvents = protocolAlerts+a, protocolEvents+e
	}
	n.Tick() // the last window's summary
	rd := n.Ready()
	a, e := floodAccount(t, rd, AlertStorage)
	storageAlerts, storageEvents = storageAlerts+a, storageEvents+e
	a, e = floodAccount(t, rd, AlertProtocol)
	protocolAlerts, protocolEvents = protocolAlerts+a, protocolEvents+e
	for _, c := range []struct {
		kind           AlertKind
		alerts, events int
	}{{AlertStorage, storageAlerts, storageEvents}, {AlertProtocol, protocolAlerts, protocolEvents}} {
		if c.alerts > 1+5+1 {
			t.Errorf("%v: %d alerts for %d events in 5 alert intervals: not rate-limited", c.kind, c.alerts, c.events)
		}
		if c.alerts < 2 {
			t.Errorf("%v: %d alerts: the flood was not reported again", c.kind, c.alerts)
		}
		if c.events != rounds {
			t.Errorf("%v: the alerts account for %d events, want %d", c.kind, c.events, rounds)
		}
	}
}

// TestAlertConditionsNotSuppressed: event alerts of a kind are limited, but
// they do not hold back the report of a lasting condition of the same kind:
// a fence decided now is said now.
func TestAlertConditionsNotSuppressed(t *testing.T) {
	n := mustNode(t, testConfig(2, logOf(1, 1)), Boot{HardState: HardState{Term: 1, LearnedCommit: 5}, Verdict: VerdictClean})
	if rd := n.Ready(); alertsOf(rd, AlertFenced) != 1 {
		t.Fatalf("boot: %v", rd.Alerts)
	}
	heartbeat := Message{Type: MsgApp, From: 1, To: 2, Term: 1, PrevLogIndex: 2, PrevLogTerm: 1}
	if err := n.Step(heartbeat); err != nil {
		t.Fatal(err)
	}
	// Three TimeoutNow to a fenced member: event alerts of kind FENCED.
	for k := 0; k < 3; k++ {
		if err := n.Step(Message{Type: MsgTimeoutNow, From: 1, To: 2, Term: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if got := alertsOf(n.Ready(), AlertFenced); got != 1 {
		t.Fatalf("%d FENCED alerts for three TimeoutNow, want 1", got)
	}
	// The leader goes silent: row 4b, the permanent fence; then it is heard
	// again: row 2, reported at once, within the FENCED events' window.
	tickSilent(n)
	if rd := n.Ready(); alertsOf(rd, AlertPermanentFence) != 1 || n.Status().FenceRow != "4b" {
		t.Fatalf("silent: row %s, %v", n.Status().FenceRow, rd.Alerts)
	}
	if n.cfg.CatchUpTicks+1 >= n.cfg.AlertTicks {
		t.Fatalf("the test needs CatchUpTicks %d < AlertTicks %d", n.cfg.CatchUpTicks, n.cfg.AlertTicks)
	}
	if err := n.Step(heartbeat); err != nil {
		t.Fatal(err)
	}
	if rd := n.Ready(); alertsOf(rd, AlertFenced) != 1 || n.Status().FenceRow != "2" {
		t.Fatalf("a leader heard again: row %s, alerts %v", n.Status().FenceRow, rd.Alerts)
	}
}
