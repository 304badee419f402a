package kv

// Mark is a coverage mark of the store: a path of the session rules worth
// reaching. The store stays pure: it reports a mark to Options.OnMark (nil:
// nothing, at no cost); the simulator counts it with impl/marks under the
// mark's name and fails when its seeds never reach one (docs/raftsim.md).
type Mark uint8

const (
	MarkRetryDeduplicated Mark = iota + 1
	MarkStaleRefused
	MarkExpiredRefused
	MarkSessionExpired
	markEnd
)

var markInfo = [markEnd]struct{ name, what string }{
	MarkRetryDeduplicated: {"kv/retry-deduplicated", "a retried write answered with its kept answer, not executed again (S4)"},
	MarkStaleRefused:      {"kv/stale-refused", "a delayed duplicate below the session's lowest unacknowledged request refused (S3)"},
	MarkExpiredRefused:    {"kv/expired-refused", "a write of an expired or unknown session refused (S2)"},
	MarkSessionExpired:    {"kv/session-expired", "a session expired on the store's clock"},
}

// String is the mark's name, "kv/what-happened".
func (m Mark) String() string {
	if m == 0 || m >= markEnd {
		return "kv/unknown-mark"
	}
	return markInfo[m].name
}

// What says in a few words when the mark is hit.
func (m Mark) What() string {
	if m == 0 || m >= markEnd {
		return ""
	}
	return markInfo[m].what
}

// AllMarks lists every mark of the store.
func AllMarks() []Mark {
	out := make([]Mark, 0, markEnd-1)
	for m := Mark(1); m < markEnd; m++ {
		out = append(out, m)
	}
	return out
}

// sessionMarks is the mark of each session row (0 for the rows not worth
// one: S1, S5, S6).
var sessionMarks = [rowEnd]Mark{rowUnknown: MarkExpiredRefused, rowStale: MarkStaleRefused, rowCached: MarkRetryDeduplicated}

// mark reports that the store took m's path.
func (st *Store) mark(m Mark) {
	if m != 0 && st.onMark != nil {
		st.onMark(m)
	}
}
