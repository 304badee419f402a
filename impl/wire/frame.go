package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Version is the frame format's version.
const Version = 1

// HeaderBytes and TrailerBytes frame every payload.
const (
	HeaderBytes  = 8
	TrailerBytes = 4
)

// PayloadBytesMaxDefault is the default bound on one frame's payload.
const PayloadBytesMaxDefault = 8 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrFrame wraps every error of a frame that does not verify.
var ErrFrame = errors.New("wire: bad frame")

// AppendFrame appends one frame of type typ around payload to dst.
func AppendFrame(dst []byte, typ uint8, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, Version, typ, 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = append(dst, payload...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// BeginFrame starts a frame in dst whose payload the caller appends next;
// FinishFrame (with the returned start) fills in the length and appends
// the checksum. It avoids building the payload in a buffer of its own.
func BeginFrame(dst []byte, typ uint8) (out []byte, start int) {
	start = len(dst)
	return append(dst, Version, typ, 0, 0, 0, 0, 0, 0), start
}

// FinishFrame completes the frame begun at start.
func FinishFrame(dst []byte, start int) []byte {
	binary.LittleEndian.PutUint32(dst[start+4:], uint32(len(dst)-start-HeaderBytes))
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// Frame is one decoded frame. Payload is the Reader's to hand out: a new
// allocation per frame, never reused, so that what is decoded from it may
// alias it.
type Frame struct {
	Type    uint8
	Payload []byte
}

// Reader reads frames from a stream.
type Reader struct {
	r          io.Reader
	payloadMax int
	hdr        [HeaderBytes]byte
}

// NewReader reads frames from r, refusing payloads over payloadMax bytes
// (PayloadBytesMaxDefault when payloadMax <= 0).
func NewReader(r io.Reader, payloadMax int) *Reader {
	if payloadMax <= 0 {
		payloadMax = PayloadBytesMaxDefault
	}
	return &Reader{r: r, payloadMax: payloadMax}
}

// Read reads the next frame. io.EOF at a frame boundary is returned as it
// is; a stream that ends inside a frame is io.ErrUnexpectedEOF; a frame
// that does not verify wraps ErrFrame.
func (fr *Reader) Read() (Frame, error) {
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		return Frame{}, err
	}
	h := fr.hdr[:]
	if err := CheckHeader(h, fr.payloadMax); err != nil {
		return Frame{}, err
	}
	n := int(binary.LittleEndian.Uint32(h[4:]))
	buf := make([]byte, n+TrailerBytes)
	if _, err := io.ReadFull(fr.r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	sum := crc32.Update(crc32.Checksum(h, castagnoli), castagnoli, buf[:n])
	if got := binary.LittleEndian.Uint32(buf[n:]); got != sum {
		return Frame{}, fmt.Errorf("%w: checksum %08x, want %08x (type %d, %d bytes)", ErrFrame, got, sum, h[1], n)
	}
	return Frame{Type: h[1], Payload: buf[:n:n]}, nil
}

// CheckHeader verifies a frame header against a payload limit.
func CheckHeader(h []byte, payloadMax int) error {
	switch {
	case len(h) < HeaderBytes:
		return fmt.Errorf("%w: header of %d bytes", ErrFrame, len(h))
	case h[0] != Version:
		return fmt.Errorf("%w: version %d, want %d", ErrFrame, h[0], Version)
	case h[1] == 0:
		return fmt.Errorf("%w: type 0", ErrFrame)
	case h[2] != 0 || h[3] != 0:
		return fmt.Errorf("%w: reserved bytes %02x%02x not zero", ErrFrame, h[2], h[3])
	}
	if n := binary.LittleEndian.Uint32(h[4:]); uint64(n) > uint64(payloadMax) {
		return fmt.Errorf("%w: payload of %d bytes over the limit of %d", ErrFrame, n, payloadMax)
	}
	return nil
}

// Decode decodes exactly one frame from b (a test and fuzzing helper with
// the Reader's rules).
func Decode(b []byte, payloadMax int) (Frame, error) {
	if len(b) < HeaderBytes+TrailerBytes {
		return Frame{}, fmt.Errorf("%w: %d bytes", ErrFrame, len(b))
	}
	fr := NewReader(bytesReader(b), payloadMax)
	f, err := fr.Read()
	if err != nil {
		if !errors.Is(err, ErrFrame) {
			err = fmt.Errorf("%w: %w", ErrFrame, err)
		}
		return Frame{}, err
	}
	if n := HeaderBytes + len(f.Payload) + TrailerBytes; n != len(b) {
		return Frame{}, fmt.Errorf("%w: %d trailing bytes", ErrFrame, len(b)-n)
	}
	return f, nil
}

type sliceReader struct{ b []byte }

func bytesReader(b []byte) *sliceReader { return &sliceReader{b} }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}
