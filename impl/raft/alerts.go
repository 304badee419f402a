package raft

import "fmt"

// Alerts. A lasting condition (a fence row, a failed WAL, a lost hard
// state) runs on its own cadence: reported when it begins or changes and
// every Config.AlertTicks while it lasts (alertCondition). An event that a
// peer or storage can repeat on every message — a read that fails, a
// message the protocol forbids, a takeover a fenced member refuses — goes
// through a limiter per kind (alert): the first of a window is reported,
// the others of the same kind in the next AlertTicks ticks are counted,
// and when the window ends a summary alert says how many were suppressed
// and repeats the latest. So a peer cannot flood the operator (one alert
// per heartbeat per follower before), and no event goes unaccounted.

// alertLimit is one kind's limiter.
type alertLimit struct {
	reported   bool   // one was reported in this node's life
	at         uint64 // the tick of the last reported (or summarized)
	suppressed uint64 // since then
	latest     string // the latest suppressed text
}

// alertCondition reports a lasting condition: not rate-limited, its caller
// keeps the cadence.
func (n *Node) alertCondition(kind AlertKind, format string, args ...any) {
	n.alerts = append(n.alerts, Alert{Kind: kind, Text: fmt.Sprintf("node %d: ", n.id) + fmt.Sprintf(format, args...)})
}

// alert reports an event, at most once per AlertTicks per kind.
func (n *Node) alert(kind AlertKind, format string, args ...any) {
	l := &n.alertLimits[kind]
	if l.reported && n.ticks-l.at < uint64(n.cfg.AlertTicks) {
		l.suppressed++
		l.latest = fmt.Sprintf(format, args...)
		return
	}
	l.reported, l.at, l.suppressed, l.latest = true, n.ticks, 0, ""
	n.alertCondition(kind, format, args...)
}

// flushSuppressedAlerts, on every tick, ends the windows that have run
// out with a summary of what they suppressed.
func (n *Node) flushSuppressedAlerts() {
	for k := range n.alertLimits {
		l := &n.alertLimits[k]
		if l.suppressed == 0 || n.ticks-l.at < uint64(n.cfg.AlertTicks) {
			continue
		}
		n.alertCondition(AlertKind(k), "%d more suppressed in the last %d ticks; the latest: %s", l.suppressed, n.ticks-l.at, l.latest)
		l.at, l.suppressed, l.latest = n.ticks, 0, ""
	}
}
