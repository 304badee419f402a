package kv_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/durableraft/durableraft/impl/kv"
)

var (
	k = []byte("k")
	v = []byte("v")
)

// Every rule of the command format, one row each: what Validate (and so the
// decoder) says about a command.
func TestCommandValidate(t *testing.T) {
	big := func(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }
	cases := []struct {
		name string
		c    kv.Command
		err  error  // nil: valid
		msg  string // part of the error message
	}{
		{"noop", kv.Noop().At(5), nil, ""},
		{"put", kv.Put(k, v), nil, ""},
		{"put empty value", kv.Put(k, nil), nil, ""},
		{"put in session", kv.Put(k, v).InSession(7, 3, 1), nil, ""},
		{"put seq = lowest unacked", kv.Put(k, v).InSession(7, 3, 3), nil, ""},
		{"delete", kv.Delete(k), nil, ""},
		{"cas value", kv.CASValue(k, v, []byte("w")), nil, ""},
		{"cas revision 0 (create)", kv.CASRevision(k, 0, v), nil, ""},
		{"delete if revision", kv.DeleteIfRevision(k, 4), nil, ""},
		{"register", kv.Register(1000), nil, ""},
		{"keep-alive no news", kv.KeepAlive(7, 0), nil, ""},
		{"keep-alive acks", kv.KeepAlive(7, 9), nil, ""},
		{"close", kv.Close(7), nil, ""},
		{"key at limit", kv.Put(big(kv.KeyBytesMax), v), nil, ""},
		{"value at limit", kv.CASValue(k, big(kv.ValueBytesMax), big(kv.ValueBytesMax)), nil, ""},

		{"unknown op 0", kv.Command{}, kv.ErrBadCommand, "unknown op 0"},
		{"unknown op 99", kv.Command{Op: 99}, kv.ErrBadCommand, "unknown op 99"},
		{"time over limit", kv.Noop().At(kv.TimeMsMax + 1), kv.ErrBadCommand, "time"},
		{"noop with session", kv.Noop().InSession(1, 1, 1), kv.ErrBadCommand, "carries no session fields"},
		{"register with session", kv.Register(10).InSession(1, 1, 1), kv.ErrBadCommand, "carries no session fields"},
		{"seq without session", kv.Put(k, v).InSession(0, 1, 0), kv.ErrBadCommand, "without a session"},
		{"lowest unacked without session", kv.Put(k, v).InSession(0, 0, 1), kv.ErrBadCommand, "without a session"},
		{"session without seq", kv.Put(k, v).InSession(7, 0, 0), kv.ErrBadCommand, "1 <= lowest-unacked <= seq"},
		{"lowest unacked 0", kv.Put(k, v).InSession(7, 2, 0), kv.ErrBadCommand, "1 <= lowest-unacked <= seq"},
		{"lowest unacked above seq", kv.Put(k, v).InSession(7, 2, 3), kv.ErrBadCommand, "1 <= lowest-unacked <= seq"},
		{"seq over limit", kv.Put(k, v).InSession(7, kv.SeqMax+1, 1), kv.ErrBadCommand, "1 <= lowest-unacked <= seq"},
		{"session id over limit", kv.Put(k, v).InSession(kv.RevisionMax+1, 1, 1), kv.ErrBadCommand, "session id"},
		{"keep-alive without session", kv.KeepAlive(0, 0), kv.ErrBadCommand, "needs a session id"},
		{"keep-alive with seq", kv.KeepAlive(7, 0).InSession(7, 1, 0), kv.ErrBadCommand, "no sequence number"},
		{"keep-alive lowest unacked over limit", kv.KeepAlive(7, kv.SeqMax+1), kv.ErrBadCommand, "over 2^62"},
		{"close with lowest unacked", kv.Command{Op: kv.OpClose, Session: 7, LowestUnacked: 1}, kv.ErrBadCommand, "no lowest-unacked"},
		{"empty key", kv.Put(nil, v), kv.ErrBadCommand, "empty key"},
		{"key over limit", kv.Put(big(kv.KeyBytesMax+1), v), kv.ErrTooLarge, "key of 4097 bytes"},
		{"value over limit", kv.Put(k, big(kv.ValueBytesMax+1)), kv.ErrTooLarge, "value of"},
		{"expected value over limit", kv.CASValue(k, big(kv.ValueBytesMax+1), v), kv.ErrTooLarge, "value of"},
		{"delete with value", kv.Command{Op: kv.OpDelete, Key: k, Value: v}, kv.ErrBadCommand, "does not have"},
		{"put with expected value", kv.Command{Op: kv.OpPut, Key: k, ValueExpected: v}, kv.ErrBadCommand, "does not have"},
		{"put with revision", kv.Command{Op: kv.OpPut, Key: k, RevisionExpected: 1}, kv.ErrBadCommand, "does not have"},
		{"noop with key", kv.Command{Op: kv.OpNoop, Key: k}, kv.ErrBadCommand, "does not have"},
		{"put with timeout", kv.Command{Op: kv.OpPut, Key: k, TimeoutMs: 1}, kv.ErrBadCommand, "does not have"},
		{"revision over limit", kv.CASRevision(k, kv.RevisionMax+1, v), kv.ErrBadCommand, "revision"},
		{"delete if revision 0", kv.DeleteIfRevision(k, 0), kv.ErrBadCommand, "revision 0"},
		{"register timeout 0", kv.Register(0), kv.ErrBadCommand, "timeout 0"},
		{"register timeout over limit", kv.Register(kv.SessionTimeoutMsMax + 1), kv.ErrBadCommand, "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if tc.err == nil {
				if err != nil {
					t.Fatalf("%v: %v", tc.c, err)
				}
				roundTrip(t, tc.c)
				return
			}
			if !errors.Is(err, tc.err) || !errors.Is(err, kv.ErrBadCommand) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("%v: error %v, want %v containing %q", tc.c, err, tc.err, tc.msg)
			}
			if _, err2 := tc.c.Marshal(); err2 == nil {
				t.Fatalf("Marshal accepted what Validate refuses")
			}
		})
	}
}

func roundTrip(t *testing.T, c kv.Command) {
	t.Helper()
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != c.EncodedSize() || len(b) > kv.CommandBytesMax {
		t.Fatalf("encoded %d bytes, EncodedSize %d, limit %d", len(b), c.EncodedSize(), kv.CommandBytesMax)
	}
	d, err := kv.DecodeCommand(b)
	if err != nil {
		t.Fatalf("decode of %v: %v", c, err)
	}
	if d.String() != c.String() || !bytes.Equal(d.Key, c.Key) || !bytes.Equal(d.Value, c.Value) || !bytes.Equal(d.ValueExpected, c.ValueExpected) {
		t.Fatalf("round trip: %v became %v", c, d)
	}
	b2, _ := d.Marshal()
	if !bytes.Equal(b, b2) {
		t.Fatal("re-encoding differs")
	}
}

// The decoder's framing rules: the bytes of a valid command, damaged one way
// per row.
func TestDecodeCommandFraming(t *testing.T) {
	good, _ := kv.CASValue(k, v, []byte("w")).InSession(3, 5, 2).At(99).Marshal()
	with := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name string
		b    []byte
		err  error
		msg  string
	}{
		{"empty", nil, kv.ErrBadCommand, "shorter than"},
		{"header only", good[:34], kv.ErrBadCommand, "truncated in the key length"},
		{"cut in the key", good[:38], kv.ErrBadCommand, "truncated in the key"},
		{"cut in the value", good[:len(good)-1], kv.ErrBadCommand, "truncated in the value"},
		{"trailing byte", append(bytes.Clone(good), 0), kv.ErrBadCommand, "1 trailing bytes"},
		{"version 2", with(func(b []byte) []byte { b[0] = 2; return b }), kv.ErrBadCommand, "version 2"},
		{"op 0", with(func(b []byte) []byte { b[1] = 0; return b }), kv.ErrBadCommand, "unknown op 0"},
		{"op 200", with(func(b []byte) []byte { b[1] = 200; return b }), kv.ErrBadCommand, "unknown op 200"},
		{"key length huge", with(func(b []byte) []byte { b[34], b[35], b[36], b[37] = 0xff, 0xff, 0xff, 0xff; return b }), kv.ErrTooLarge, "key of 4294967295 bytes"},
		{"over the command limit", make([]byte, kv.CommandBytesMax+1), kv.ErrTooLarge, "over"},
		{"op changed to put", with(func(b []byte) []byte { b[1] = byte(kv.OpPut); return b }), kv.ErrBadCommand, "trailing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kv.DecodeCommand(tc.b)
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %v containing %q", err, tc.err, tc.msg)
			}
		})
	}
	// Every strict prefix of a valid command is refused.
	for n := range len(good) {
		if _, err := kv.DecodeCommand(good[:n]); err == nil {
			t.Fatalf("prefix of %d bytes accepted", n)
		}
	}
}

func TestResultFormat(t *testing.T) {
	valid := []kv.Result{
		{Code: kv.CodeOK, Index: 1},
		{Code: kv.CodeOK, Index: 9, Revision: 9},
		{Code: kv.CodeMismatch, Index: 9, Revision: 4},
		{Code: kv.CodeMismatch, Index: 9},
		{Code: kv.CodeNotFound, Index: 2},
		{Code: kv.CodeBadCommand, Index: 3, Message: "kv: bad command: why"},
	}
	for _, r := range valid {
		b := r.Marshal()
		d, err := kv.DecodeResult(b)
		if err != nil || d != r {
			t.Fatalf("%v: decoded %v, %v", r, d, err)
		}
		for n := range len(b) {
			if _, err := kv.DecodeResult(b[:n]); !errors.Is(err, kv.ErrBadResult) {
				t.Fatalf("%v: prefix of %d bytes: %v", r, n, err)
			}
		}
	}
	invalid := []kv.Result{
		{Code: 0, Index: 1},
		{Code: kv.CodeOK, Index: 0},
		{Code: kv.CodeOK, Index: 5, Revision: 4},
		{Code: kv.CodeMismatch, Index: 5, Revision: 5},
		{Code: kv.CodeNotFound, Index: 5, Revision: 1},
		{Code: kv.CodeOK, Index: 5, Message: "x"},
		{Code: kv.CodeBadCommand, Index: 5, Message: strings.Repeat("x", 257)},
		{Code: kv.CodeBadCommand, Index: 5, Message: "\xff"},
	}
	for _, r := range invalid {
		if err := r.Validate(); !errors.Is(err, kv.ErrBadResult) {
			t.Fatalf("%v: Validate %v", r, err)
		}
	}
}
