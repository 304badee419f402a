package wire

import (
	"encoding/binary"
	"fmt"
)

// Encoder appends payload fields: fixed-width little-endian integers and
// u32-length-prefixed byte strings.
type Encoder struct{ B []byte }

func (e *Encoder) U8(v uint8)      { e.B = append(e.B, v) }
func (e *Encoder) U32(v uint32)    { e.B = binary.LittleEndian.AppendUint32(e.B, v) }
func (e *Encoder) U64(v uint64)    { e.B = binary.LittleEndian.AppendUint64(e.B, v) }
func (e *Encoder) Bytes(b []byte)  { e.U32(uint32(len(b))); e.B = append(e.B, b...) }
func (e *Encoder) String(s string) { e.U32(uint32(len(s))); e.B = append(e.B, s...) }

// Decoder reads payload fields strictly; the first error sticks (and wraps
// ErrFrame: a payload that does not decode is a bad frame).
type Decoder struct {
	b   []byte
	off int
	err error
}

// NewDecoder decodes b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Err is the first error met.
func (d *Decoder) Err() error { return d.err }

// Fail records err (wrapped in ErrFrame) unless an error is recorded.
func (d *Decoder) Fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrFrame}, args...)...)
	}
}

func (d *Decoder) need(n int, what string) bool {
	if d.err != nil {
		return false
	}
	if len(d.b)-d.off < n {
		d.Fail("%s: %d bytes needed at offset %d, %d left", what, n, d.off, len(d.b)-d.off)
		return false
	}
	return true
}

func (d *Decoder) U8(what string) uint8 {
	if !d.need(1, what) {
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *Decoder) U32(what string) uint32 {
	if !d.need(4, what) {
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *Decoder) U64(what string) uint64 {
	if !d.need(8, what) {
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

// Bytes reads a length-prefixed byte string of at most limit bytes; the
// result aliases the payload.
func (d *Decoder) Bytes(what string, limit int) []byte {
	n := d.U32(what + " length")
	if d.err != nil {
		return nil
	}
	if uint64(n) > uint64(limit) {
		d.Fail("%s of %d bytes over the limit of %d", what, n, limit)
		return nil
	}
	if !d.need(int(n), what) {
		return nil
	}
	v := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return v
}

// String reads a length-prefixed string of at most limit bytes.
func (d *Decoder) String(what string, limit int) string { return string(d.Bytes(what, limit)) }

// Count reads a u32 count of items that take at least itemMin bytes each,
// refusing one that the bytes left cannot hold or that exceeds limit.
func (d *Decoder) Count(what string, itemMin, limit int) int {
	n := d.U32(what)
	if d.err != nil {
		return 0
	}
	if uint64(n) > uint64(limit) || uint64(n)*uint64(max(itemMin, 1)) > uint64(len(d.b)-d.off) {
		d.Fail("%s: %d items in %d bytes (limit %d)", what, n, len(d.b)-d.off, limit)
		return 0
	}
	return int(n)
}

// Left is the number of bytes not yet read.
func (d *Decoder) Left() int { return len(d.b) - d.off }

// End fails unless every byte was read, and returns the first error.
func (d *Decoder) End() error {
	if d.err == nil && d.off != len(d.b) {
		d.Fail("%d trailing bytes", len(d.b)-d.off)
	}
	return d.err
}
