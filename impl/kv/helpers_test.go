package kv_test

import (
	"bytes"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/kv/kvtest"
)

// tb is what the helpers need of a *testing.T or a *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// replica applies commands one entry after another to a store, through the
// bytes (Apply), recording the log for the at-most-once checker.
type replica struct {
	t   tb
	rec *kvtest.Recorder
}

func newReplica(t tb, bugs kv.Bug) *replica {
	return &replica{t: t, rec: &kvtest.Recorder{Store: kv.NewStore(kv.Options{TestingBugs: bugs})}}
}

func (r *replica) store() *kv.Store { return r.rec.Store }

func (r *replica) next() uint64 { return r.store().AppliedIndex() + 1 }

// apply proposes c as the next entry and returns its decoded result.
func (r *replica) apply(c kv.Command) kv.Result {
	r.t.Helper()
	b, err := c.Marshal()
	if err != nil {
		r.t.Fatalf("marshal %v: %v", c, err)
	}
	return r.applyData(b)
}

func (r *replica) applyData(b []byte) kv.Result {
	r.t.Helper()
	out := r.rec.Apply(r.next(), 1, b)
	res, err := kv.DecodeResult(out)
	if err != nil {
		r.t.Fatalf("result of entry %d: %v", r.store().AppliedIndex(), err)
	}
	return res
}

func (r *replica) verify() {
	r.t.Helper()
	if err := r.store().Verify(); err != nil {
		r.t.Fatal(err)
	}
}

// snapshot returns the store's snapshot bytes.
func snapshot(t tb, st *kv.Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := st.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// restored returns a fresh store restored from st's snapshot.
func restored(t tb, st *kv.Store, bugs kv.Bug) *kv.Store {
	t.Helper()
	fresh := kv.NewStore(kv.Options{TestingBugs: bugs})
	if err := fresh.Restore(bytes.NewReader(snapshot(t, st))); err != nil {
		t.Fatal(err)
	}
	if fresh.Hash() != st.Hash() || fresh.AppliedIndex() != st.AppliedIndex() {
		t.Fatalf("restored hash %016x at %d, original %016x at %d", fresh.Hash(), fresh.AppliedIndex(), st.Hash(), st.AppliedIndex())
	}
	return fresh
}

func ok(i uint64) kv.Result          { return kv.Result{Code: kv.CodeOK, Index: i} }
func okRev(i uint64) kv.Result       { return kv.Result{Code: kv.CodeOK, Index: i, Revision: i} }
func notFound(i uint64) kv.Result    { return kv.Result{Code: kv.CodeNotFound, Index: i} }
func mismatch(i, r uint64) kv.Result { return kv.Result{Code: kv.CodeMismatch, Index: i, Revision: r} }
func code(c kv.Code, i uint64) kv.Result {
	return kv.Result{Code: c, Index: i}
}
