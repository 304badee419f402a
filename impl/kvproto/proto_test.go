package kvproto

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/wire"
)

func sampleRequests() []Request {
	cmd, _ := kv.Put([]byte("k"), []byte("v")).InSession(3, 4, 4).Marshal()
	return []Request{{ID: 1, Op: OpCommand, Command: cmd}, {ID: 2, Op: OpRead, Key: []byte("k")}, {ID: 3, Op: OpStaleRead, Key: []byte("x")}}
}

func sampleResponses() []Response {
	res := kv.Result{Code: kv.CodeOK, Index: 5, Revision: 5}.Marshal()
	return []Response{
		{ID: 1, Status: StatusResult, Result: res},
		{ID: 2, Status: StatusValue, Found: true, Revision: 5, Value: []byte("v")},
		{ID: 3, Status: StatusValue},
		{ID: 4, Status: StatusError, Code: "not_leader", Message: "no", Definite: true, Leader: 2, LeaderAddr: "127.0.0.1:1"},
	}
}

var bytesEq = cmp.Comparer(func(a, b []byte) bool { return bytes.Equal(a, b) })

func TestRoundTrip(t *testing.T) {
	rq, err := DecodeRequests(EncodeRequests(nil, sampleRequests()))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sampleRequests(), rq, bytesEq); d != "" {
		t.Fatal(d)
	}
	rs, err := DecodeResponses(EncodeResponses(nil, sampleResponses()))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sampleResponses(), rs, bytesEq); d != "" {
		t.Fatal(d)
	}
}

func TestRefusals(t *testing.T) {
	req := EncodeRequests(nil, sampleRequests())
	resp := EncodeResponses(nil, sampleResponses())
	mod := func(b []byte, at int, v byte) []byte { c := append([]byte(nil), b...); c[at] = v; return c }
	rows := []struct {
		name string
		b    []byte
		dec  func([]byte) error
	}{
		{"request trailing", append(append([]byte(nil), req...), 0), decReq},
		{"request op", mod(req, 4+8, 9), decReq},
		{"request count", mod(req, 0, 200), decReq},
		{"request truncated", req[:len(req)-1], decReq},
		{"key too long", EncodeRequests(nil, []Request{{ID: 1, Op: OpRead, Key: make([]byte, kv.KeyBytesMax+1)}}), decReq},
		{"response status", mod(resp, 4+8, 0), decResp},
		{"response bool", EncodeResponses(nil, []Response{{ID: 1, Status: StatusValue, Found: true}})[:4+9], decResp},
		{"value without found", EncodeResponses(nil, []Response{{ID: 1, Status: StatusValue, Revision: 3}}), decResp},
	}
	for _, r := range rows {
		if err := r.dec(r.b); !errors.Is(err, wire.ErrFrame) {
			t.Errorf("%s: %v, want ErrFrame", r.name, err)
		}
	}
}

func decReq(b []byte) error  { _, err := DecodeRequests(b); return err }
func decResp(b []byte) error { _, err := DecodeResponses(b); return err }

// FuzzRequests and FuzzResponses: never a panic; what decodes re-encodes
// to the same bytes.
func FuzzRequests(f *testing.F) {
	f.Add(EncodeRequests(nil, sampleRequests()))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := DecodeRequests(b)
		if err != nil {
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatal(err)
			}
			return
		}
		if !bytes.Equal(EncodeRequests(nil, rs), b) {
			t.Fatal("not canonical")
		}
	})
}

func FuzzResponses(f *testing.F) {
	f.Add(EncodeResponses(nil, sampleResponses()))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := DecodeResponses(b)
		if err != nil {
			if !errors.Is(err, wire.ErrFrame) {
				t.Fatal(err)
			}
			return
		}
		if !bytes.Equal(EncodeResponses(nil, rs), b) {
			t.Fatal("not canonical")
		}
	})
}
