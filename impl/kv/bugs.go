package kv

import "strings"

// Bug is a set of test-only switches, each re-introducing the failure that
// one session rule prevents (docs/kv.md, "Session rules"). The simulator and
// the tests set them to show that the at-most-once checker catches each.
type Bug uint8

// The switches.
const (
	// BugNoDedup: a retried request inside the window is executed again
	// instead of being answered from the session's cache (row S4).
	BugNoDedup Bug = 1 << iota
	// BugStaleReexecutes: a request below the session's lowest
	// unacknowledged sequence number is executed again instead of refused
	// (row S3): a delayed duplicate after the client moved on.
	BugStaleReexecutes
	// BugExpiredReexecutes: a request on an expired or unknown session is
	// executed as a write without a session instead of refused (row S2).
	BugExpiredReexecutes
	bugEnd
)

var bugNames = map[Bug]string{
	BugNoDedup:           "session-dedup-off",
	BugStaleReexecutes:   "stale-request-reexecutes",
	BugExpiredReexecutes: "expired-session-reexecutes",
}

func (b Bug) String() string {
	if b == 0 {
		return "none"
	}
	var names []string
	for bit := Bug(1); bit < bugEnd; bit <<= 1 {
		if b&bit != 0 {
			names = append(names, bugNames[bit])
		}
	}
	return strings.Join(names, ",")
}

// AllBugs lists every switch.
func AllBugs() []Bug {
	var out []Bug
	for bit := Bug(1); bit < bugEnd; bit <<= 1 {
		out = append(out, bit)
	}
	return out
}
