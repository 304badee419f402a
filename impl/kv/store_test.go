package kv_test

import (
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/kv"
)

type step struct {
	c    kv.Command
	want kv.Result
}

// The write semantics, as scripts from index 1: each step's command and its answer.
func TestWrites(t *testing.T) {
	w := []byte("w")
	cases := []struct {
		name  string
		steps []step
		final map[string]string // key -> value@revision after the script
	}{
		{"put then get", []step{{kv.Put(k, v), okRev(1)}}, map[string]string{"k": "v@1"}},
		{"overwrite moves the revision", []step{{kv.Put(k, v), okRev(1)}, {kv.Noop(), ok(2)}, {kv.Put(k, w), okRev(3)}}, map[string]string{"k": "w@3"}},
		{"empty value is present", []step{{kv.Put(k, nil), okRev(1)}}, map[string]string{"k": "@1"}},
		{"delete absent", []step{{kv.Delete(k), notFound(1)}}, nil},
		{"delete present", []step{{kv.Put(k, v), okRev(1)}, {kv.Delete(k), ok(2)}, {kv.Delete(k), notFound(3)}}, nil},
		{"cas value hits", []step{{kv.Put(k, v), okRev(1)}, {kv.CASValue(k, v, w), okRev(2)}}, map[string]string{"k": "w@2"}},
		{"cas value misses", []step{{kv.Put(k, v), okRev(1)}, {kv.CASValue(k, w, w), mismatch(2, 1)}}, map[string]string{"k": "v@1"}},
		{"cas value on absent", []step{{kv.CASValue(k, nil, w), mismatch(1, 0)}}, nil},
		{"cas empty value hits", []step{{kv.Put(k, nil), okRev(1)}, {kv.CASValue(k, nil, w), okRev(2)}}, map[string]string{"k": "w@2"}},
		{"cas revision hits", []step{{kv.Put(k, v), okRev(1)}, {kv.CASRevision(k, 1, w), okRev(2)}}, map[string]string{"k": "w@2"}},
		{"cas revision misses", []step{{kv.Put(k, v), okRev(1)}, {kv.CASRevision(k, 2, w), mismatch(2, 1)}}, map[string]string{"k": "v@1"}},
		{"create (cas revision 0)", []step{{kv.CASRevision(k, 0, v), okRev(1)}, {kv.CASRevision(k, 0, w), mismatch(2, 1)}}, map[string]string{"k": "v@1"}},
		{"delete if revision hits", []step{{kv.Put(k, v), okRev(1)}, {kv.DeleteIfRevision(k, 1), ok(2)}}, nil},
		{"delete if revision misses", []step{{kv.Put(k, v), okRev(1)}, {kv.DeleteIfRevision(k, 7), mismatch(2, 1)}}, map[string]string{"k": "v@1"}},
		{"delete if revision on absent", []step{{kv.DeleteIfRevision(k, 7), mismatch(1, 0)}}, nil},
		{"recreate after delete", []step{{kv.Put(k, v), okRev(1)}, {kv.Delete(k), ok(2)}, {kv.CASRevision(k, 0, w), okRev(3)}}, map[string]string{"k": "w@3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newReplica(t, 0)
			for _, s := range tc.steps {
				if got := r.apply(s.c); got != s.want {
					t.Fatalf("%v: got %v, want %v", s.c, got, s.want)
				}
				r.verify()
			}
			got := map[string]string{}
			r.store().Range(func(key, value []byte, rev uint64) bool {
				got[string(key)] = string(value) + "@" + itoa(rev)
				return true
			})
			if len(got) != len(tc.final) {
				t.Fatalf("state %v, want %v", got, tc.final)
			}
			for key, want := range tc.final {
				if got[key] != want {
					t.Fatalf("state %v, want %v", got, tc.final)
				}
				val, rev, found := r.store().Get([]byte(key))
				if !found || string(val)+"@"+itoa(rev) != want {
					t.Fatalf("Get(%q) = %q, %d, %v; want %s", key, val, rev, found, want)
				}
			}
		})
	}
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// The store keeps its own copy of a value: the proposer's buffer may be reused.
func TestValueIsCopied(t *testing.T) {
	r := newReplica(t, 0)
	data, _ := kv.Put(k, []byte("abc")).Marshal()
	r.applyData(data)
	for i := range data {
		data[i] = 'X'
	}
	if val, _, _ := r.store().Get(k); string(val) != "abc" {
		t.Fatalf("value %q after the entry's buffer changed", val)
	}
	r.verify()
}

// Bad entries answer CodeBadCommand, move only the applied index, and are counted.
func TestBadEntries(t *testing.T) {
	r := newReplica(t, 0)
	r.apply(kv.Put(k, v).At(10))
	before := r.store().Hash()
	for _, data := range [][]byte{{0}, {1, 200}, make([]byte, 40), []byte("garbage that is long enough to have a header")} {
		res := r.applyData(data)
		if res.Code != kv.CodeBadCommand || res.Index != r.store().AppliedIndex() || !strings.HasPrefix(res.Message, "kv: bad command") {
			t.Fatalf("%q answered %v", data, res)
		}
	}
	if r.store().Hash() != before || r.store().ClockMs() != 10 {
		t.Fatal("a bad entry changed the state")
	}
	if s := r.store().Stats(); s.BadCommands != 4 || s.Applied != 5 {
		t.Fatalf("stats %+v", s)
	}
	// ApplyCommand answers an invalid command exactly as Apply answers bad bytes.
	res := r.store().ApplyCommand(r.next(), 1, kv.Put(nil, v))
	if res.Code != kv.CodeBadCommand || !strings.Contains(res.Message, "empty key") {
		t.Fatalf("ApplyCommand of an invalid command: %v", res)
	}
	// The core's empty entries are no-ops.
	if res := r.applyData(nil); res != ok(r.store().AppliedIndex()) {
		t.Fatalf("empty entry: %v", res)
	}
	r.verify()
}

// An entry out of order is the caller's bug: the store panics rather than diverge.
func TestApplyOutOfOrderPanics(t *testing.T) {
	for _, tc := range []struct {
		name        string
		index, term uint64
	}{{"gap", 3, 1}, {"repeat", 1, 1}, {"term back", 2, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			st := kv.NewStore(kv.Options{})
			st.Apply(1, 1, nil)
			defer func() {
				if p := recover(); p == nil || !strings.Contains(p.(string), "kv: invariant violated") {
					t.Fatalf("panic %v", p)
				}
			}()
			st.Apply(tc.index, tc.term, nil)
		})
	}
}
