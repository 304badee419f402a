package kv_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/durableraft/durableraft/impl/kv"
)

func commandSeeds() [][]byte {
	var out [][]byte
	for _, c := range []kv.Command{
		kv.Noop().At(7),
		kv.Put(b("k"), b("v")).InSession(2, 3, 1).At(9),
		kv.Put(b("k"), nil),
		kv.Delete(b("k")).InSession(2, 1, 1),
		kv.CASValue(b("k"), b("v"), b("w")),
		kv.CASRevision(b("k"), 0, b("w")).InSession(2, 5, 5),
		kv.DeleteIfRevision(b("k"), 3),
		kv.Register(1000).At(1),
		kv.KeepAlive(2, 4),
		kv.Close(2),
	} {
		data, err := c.Marshal()
		if err != nil {
			panic(err)
		}
		out = append(out, data)
	}
	cut := bytes.Clone(out[1])
	cut[34] = 0xff // a huge key length
	return append(out, nil, []byte{1}, cut, out[4][:40])
}

// FuzzDecodeCommand: the decoder never panics, refuses with ErrBadCommand,
// and what it accepts validates and re-encodes to the same bytes.
func FuzzDecodeCommand(f *testing.F) {
	for _, s := range commandSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := kv.DecodeCommand(data)
		if err != nil {
			if !errors.Is(err, kv.ErrBadCommand) {
				t.Fatalf("error %v does not wrap ErrBadCommand", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded %v does not validate: %v", c, err)
		}
		again, err := c.Marshal()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("%v re-encodes to %x, not %x (%v)", c, again, data, err)
		}
	})
}

// FuzzDecodeResult: the same for results.
func FuzzDecodeResult(f *testing.F) {
	for _, r := range []kv.Result{{Code: kv.CodeOK, Index: 3, Revision: 3}, {Code: kv.CodeMismatch, Index: 9, Revision: 2},
		{Code: kv.CodeBadCommand, Index: 1, Message: "why"}} {
		f.Add(r.Marshal())
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := kv.DecodeResult(data)
		if err != nil {
			if !errors.Is(err, kv.ErrBadResult) {
				t.Fatalf("error %v does not wrap ErrBadResult", err)
			}
			return
		}
		if !bytes.Equal(r.Marshal(), data) {
			t.Fatalf("%v re-encodes differently", r)
		}
	})
}

// fuzzStore is a store with sessions, keys and kept answers, built the same
// way on every call, for the entry under test to meet.
func fuzzStore(t tb) *kv.Store {
	return build(t,
		kv.Register(1000).At(100),
		kv.Put(b("k"), b("v")).InSession(1, 1, 1).At(100),
		kv.Put(b("j"), nil).InSession(1, 2, 1).At(100),
		kv.Register(50).At(100),
	)
}

// FuzzApply: any bytes, applied as an entry, never crash the store; two
// replicas in the same state answer them with the same bytes and stay in
// the same state; Apply and ApplyCommand agree; every invariant holds.
func FuzzApply(f *testing.F) {
	for _, s := range commandSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		x, y := fuzzStore(t), fuzzStore(t)
		i := x.AppliedIndex() + 1
		rx, ry := x.Apply(i, 1, data), y.Apply(i, 1, bytes.Clone(data))
		if !bytes.Equal(rx, ry) || x.Hash() != y.Hash() {
			t.Fatal("two replicas answered the same entry differently")
		}
		res, err := kv.DecodeResult(rx)
		if err != nil || res.Index > i {
			t.Fatalf("answer %v, %v", res, err)
		}
		if c, err := kv.DecodeCommand(data); err == nil && len(data) > 0 {
			z := fuzzStore(t)
			if rz := z.ApplyCommand(i, 1, c); rz != res || z.Hash() != x.Hash() {
				t.Fatalf("ApplyCommand answered %v, Apply %v", rz, res)
			}
		} else if len(data) > 0 && (res.Code != kv.CodeBadCommand || res.Index != i) {
			t.Fatalf("bad bytes answered %v", res)
		}
		if err := x.Verify(); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzRestore: any stream either restores a state that verifies and writes
// the same bytes back, or is refused with ErrBadSnapshot and leaves the
// store as it was. Each input is tried as it is and with its trailer's CRC
// recomputed, so that mutations reach the checks behind the checksum.
func FuzzRestore(f *testing.F) {
	f.Add(snapshot(f, kv.NewStore(kv.Options{})))
	s := snapshot(f, sample(f))
	f.Add(s)
	f.Add(s[:200])
	f.Add(snapshot(f, fuzzStore(f)))
	f.Fuzz(func(t *testing.T, data []byte) {
		tries := [][]byte{data}
		if len(data) >= 5 {
			tries = append(tries, reseal(bytes.Clone(data)))
		}
		for _, in := range tries {
			st := build(t, kv.Put(b("mine"), b("1")), kv.Register(10))
			before := snapshot(t, st)
			if err := st.Restore(bytes.NewReader(in)); err != nil {
				if !errors.Is(err, kv.ErrBadSnapshot) || !bytes.Equal(snapshot(t, st), before) {
					t.Fatalf("refused with %v; store unchanged: %v", err, bytes.Equal(snapshot(t, st), before))
				}
				continue
			}
			if err := st.Verify(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(snapshot(t, st), in) {
				t.Fatal("the restored state writes other bytes")
			}
		}
	})
}
