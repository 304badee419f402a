package kv_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/durableraft/durableraft/impl/kv"
)

// TestStampTime: stamping an encoding in place gives exactly the encoding
// of the command stamped, for every op; a time over the limit and bytes
// that are no command are refused and leave enc as it was.
func TestStampTime(t *testing.T) {
	cmds := []kv.Command{
		kv.Put([]byte("k"), []byte("v")).InSession(7, 3, 2),
		kv.CASRevision([]byte("k"), 4, []byte("v")),
		kv.Delete([]byte("k")),
		kv.DeleteIfRevision([]byte("k"), 9),
		kv.Noop(),
		kv.KeepAlive(7, 1),
		kv.Close(7),
	}
	for _, c := range cmds {
		enc, err := c.At(5).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := kv.StampTime(enc, 1_700_000_000_123); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		want, _ := c.At(1_700_000_000_123).Marshal()
		if !bytes.Equal(enc, want) {
			t.Fatalf("%v: stamped %x, want %x", c, enc, want)
		}
		got, err := kv.DecodeCommand(enc)
		if err != nil || got.TimeMs != 1_700_000_000_123 {
			t.Fatalf("%v: decodes as %v, %v", c, got, err)
		}
	}
	enc, _ := kv.Noop().Marshal()
	keep := bytes.Clone(enc)
	for _, tc := range []struct {
		name string
		b    []byte
		ms   uint64
	}{
		{"time over the limit", enc, kv.TimeMsMax + 1},
		{"short", enc[:5], 1},
		{"another version", append([]byte{9}, enc[1:]...), 1},
	} {
		before := bytes.Clone(tc.b)
		if err := kv.StampTime(tc.b, tc.ms); !errors.Is(err, kv.ErrBadCommand) || !bytes.Equal(tc.b, before) {
			t.Fatalf("%s: err %v, bytes %x -> %x", tc.name, err, before, tc.b)
		}
	}
	if !bytes.Equal(enc, keep) {
		t.Fatal("a refused stamp changed the encoding")
	}
}
