package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf []byte
	payloads := [][]byte{nil, []byte("a"), bytes.Repeat([]byte{7}, 1000)}
	for k, p := range payloads {
		buf = AppendFrame(buf, uint8(k+1), p)
	}
	b, start := BeginFrame(buf, 9)
	b = append(b, "streamed"...)
	buf = FinishFrame(b, start)
	fr := NewReader(bytes.NewReader(buf), 4096)
	for k, p := range payloads {
		f, err := fr.Read()
		if err != nil || f.Type != uint8(k+1) || !bytes.Equal(f.Payload, p) {
			t.Fatalf("frame %d: %v %d %q", k, err, f.Type, f.Payload)
		}
	}
	if f, err := fr.Read(); err != nil || f.Type != 9 || string(f.Payload) != "streamed" {
		t.Fatalf("streamed frame: %v %+v", err, f)
	}
	if _, err := fr.Read(); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
}

// TestFrameRefusals: one row per rule of the Reader.
func TestFrameRefusals(t *testing.T) {
	good := AppendFrame(nil, 3, []byte("hello"))
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	rows := []struct {
		name string
		b    []byte
		want error
	}{
		{"version", mod(func(b []byte) []byte { b[0] = 2; return b }), ErrFrame},
		{"type 0", mod(func(b []byte) []byte { b[1] = 0; return b }), ErrFrame},
		{"reserved", mod(func(b []byte) []byte { b[3] = 1; return b }), ErrFrame},
		{"checksum", mod(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrFrame},
		{"payload flip", mod(func(b []byte) []byte { b[9] ^= 0x10; return b }), ErrFrame},
		{"type flip", mod(func(b []byte) []byte { b[1] = 4; return b }), ErrFrame},
		{"oversized", mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 1<<31); return b }), ErrFrame},
		{"truncated payload", good[:len(good)-2], io.ErrUnexpectedEOF},
		{"truncated header", good[:5], io.ErrUnexpectedEOF},
	}
	for _, r := range rows {
		_, err := NewReader(bytes.NewReader(r.b), 64).Read()
		if !errors.Is(err, r.want) {
			t.Errorf("%s: %v, want %v", r.name, err, r.want)
		}
	}
}

// TestFrameLimitBeforeAllocation: a header announcing 2 GiB is refused from
// its 8 bytes, with nothing read or allocated beyond them.
func TestFrameLimitBeforeAllocation(t *testing.T) {
	h := []byte{Version, 1, 0, 0, 0, 0, 0, 0x80}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, err := NewReader(bytes.NewReader(h), 1<<20).Read(); !errors.Is(err, ErrFrame) {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Fatalf("%d bytes allocated refusing 10 oversized headers", n)
	}
}

func TestDecoderStrict(t *testing.T) {
	var e Encoder
	e.U8(1)
	e.U64(42)
	e.Bytes([]byte("key"))
	d := NewDecoder(e.B)
	if d.U8("a") != 1 || d.U64("b") != 42 || string(d.Bytes("c", 3)) != "key" || d.End() != nil {
		t.Fatal("round trip")
	}
	d = NewDecoder(e.B)
	d.U8("a")
	d.U64("b")
	if d.Bytes("c", 2); !errors.Is(d.End(), ErrFrame) {
		t.Fatal("limit not enforced")
	}
	d = NewDecoder(append(e.B, 0))
	d.U8("a")
	d.U64("b")
	d.Bytes("c", 3)
	if !errors.Is(d.End(), ErrFrame) {
		t.Fatal("trailing byte accepted")
	}
	d = NewDecoder([]byte{0xff, 0xff, 0xff, 0x7f})
	if d.Count("n", 1, 1<<30); d.Err() == nil {
		t.Fatal("count beyond the bytes accepted")
	}
}

// FuzzDecodeFrame: any bytes either decode to a frame that re-encodes to
// them exactly, or are refused with ErrFrame; never a panic.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(AppendFrame(nil, 1, nil))
	f.Add(AppendFrame(nil, 2, []byte("payload")))
	f.Add([]byte{Version, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := Decode(b, 1<<16)
		if err != nil {
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("error not wrapping ErrFrame: %v", err)
			}
			return
		}
		if !bytes.Equal(AppendFrame(nil, fr.Type, fr.Payload), b) {
			t.Fatal("accepted frame does not re-encode to its bytes")
		}
	})
}
