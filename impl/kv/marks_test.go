package kv_test

import (
	"regexp"
	"testing"

	"github.com/durableraft/durableraft/impl/kv"
)

// TestMarksReported: the store reports the session rules' paths to
// Options.OnMark, each once where it is taken: a retry answered from the
// session (S4), a delayed duplicate refused as stale (S3), a session that
// expires and the write on it refused (S2); every mark is named
// "kv/words-with-dashes" and says when it is hit.
func TestMarksReported(t *testing.T) {
	got := map[kv.Mark]int{}
	st := kv.NewStore(kv.Options{OnMark: func(m kv.Mark) { got[m]++ }})
	put := kv.Put([]byte("k"), []byte("v"))
	index := uint64(0)
	apply := func(c kv.Command) {
		data, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		index++
		st.Apply(index, 1, data)
	}
	apply(kv.Register(1000))               // session 1
	apply(put.InSession(1, 1, 1))          // S6
	apply(put.InSession(1, 1, 1))          // S4: deduplicated
	apply(put.InSession(1, 2, 2))          // S6, lowest unacknowledged now 2
	apply(put.InSession(1, 1, 1))          // S3: stale
	apply(put.InSession(1, 3, 3).At(5000)) // the session expires, then S2
	want := map[kv.Mark]int{kv.MarkRetryDeduplicated: 1, kv.MarkStaleRefused: 1, kv.MarkSessionExpired: 1, kv.MarkExpiredRefused: 1}
	if len(got) != len(want) {
		t.Fatalf("marks %v, want %v", got, want)
	}
	for m, n := range want {
		if got[m] != n {
			t.Fatalf("marks %v, want %v", got, want)
		}
	}
	valid := regexp.MustCompile(`^kv/[a-z0-9-]+$`)
	seen := map[string]bool{}
	for _, m := range kv.AllMarks() {
		if !valid.MatchString(m.String()) || seen[m.String()] || m.What() == "" {
			t.Errorf("mark %d: name %q, what %q", m, m.String(), m.What())
		}
		seen[m.String()] = true
	}
	if len(seen) != len(want) {
		t.Errorf("%d marks, %d exercised here", len(seen), len(want))
	}
}
