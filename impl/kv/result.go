package kv

import (
	"fmt"
	"unicode/utf8"
)

// Code says how a command was answered. The numbers are part of the result
// format (docs/kv.md).
type Code uint8

// The codes. OK, NotFound and Mismatch are answers of a command that was
// executed; the others refuse it, and the command changed nothing (beyond
// the clock its entry carried).
const (
	// CodeOK: done. A put or CAS: Revision is the key's new revision (the
	// entry's index). A register: the session id is Index.
	CodeOK Code = iota + 1
	// CodeNotFound: a delete of an absent key.
	CodeNotFound
	// CodeMismatch: a CAS or conditional delete whose comparison failed;
	// Revision is the key's current revision, 0 when absent.
	CodeMismatch
	// CodeSessionExpired: no live session with this id (expired, closed or
	// never registered). The request was not executed; whether an earlier
	// attempt of it was is unknown to the client.
	CodeSessionExpired
	// CodeStale: the request's sequence number is below the session's
	// lowest unacknowledged one: the client has its answer already. Not
	// executed.
	CodeStale
	// CodeWindowFull: the sequence number is SessionWindowMax or more above
	// the session's lowest unacknowledged one. Not executed.
	CodeWindowFull
	// CodeSessionLimit: a registration while SessionsMax sessions live.
	CodeSessionLimit
	// CodeBadCommand: the entry's data is not a valid command; Message says
	// why. Nothing changed.
	CodeBadCommand
	codeEnd
)

var codeNames = [codeEnd]string{
	CodeOK: "ok", CodeNotFound: "not-found", CodeMismatch: "mismatch", CodeSessionExpired: "session-expired",
	CodeStale: "stale", CodeWindowFull: "window-full", CodeSessionLimit: "session-limit", CodeBadCommand: "bad-command",
}

func (c Code) valid() bool { return c >= CodeOK && c < codeEnd }

func (c Code) String() string {
	if c.valid() {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", c)
}

// Executed reports whether a command answered with c was executed: its
// answer is the one a session keeps for retries.
func (c Code) Executed() bool { return c == CodeOK || c == CodeNotFound || c == CodeMismatch }

// Result is the answer to one applied entry, handed back to its proposer.
type Result struct {
	Code Code
	// Index is the index of the entry whose execution produced this answer:
	// for a retry answered from its session, the index of the first
	// execution, below the retry's own index.
	Index uint64
	// Revision: see the codes.
	Revision uint64
	// Message says why, for CodeBadCommand only.
	Message string
}

func (r Result) String() string {
	s := fmt.Sprintf("%v index=%d", r.Code, r.Index)
	if r.Revision != 0 {
		s += fmt.Sprintf(" rev=%d", r.Revision)
	}
	if r.Message != "" {
		s += fmt.Sprintf(" msg=%q", r.Message)
	}
	return s
}

// The result format: version, code, index, revision, message length, message.
const (
	resultVersion     = 1
	resultHeaderBytes = 1 + 1 + 8 + 8 + 2
)

// Validate checks the rules of the result format (docs/kv.md, "Results").
func (r Result) Validate() error {
	bad := func(why string) error { return fmt.Errorf("%w: %v: %s", ErrBadResult, r, why) }
	switch {
	case !r.Code.valid():
		return bad("unknown code")
	case r.Index < 1 || r.Index > RevisionMax:
		return bad("index outside 1..2^62")
	case r.Code == CodeOK && r.Revision != 0 && r.Revision != r.Index:
		return bad("an ok revision is the index or 0")
	case r.Code == CodeMismatch && r.Revision >= r.Index:
		return bad("a mismatch revision is below the index")
	case r.Code != CodeOK && r.Code != CodeMismatch && r.Revision != 0:
		return bad("this code carries no revision")
	case r.Code != CodeBadCommand && r.Message != "":
		return bad("only bad-command carries a message")
	case len(r.Message) > messageBytesMax || !utf8.ValidString(r.Message):
		return bad("message too long or not UTF-8")
	}
	return nil
}

// AppendResult appends the encoding of r (which must validate) to dst.
func AppendResult(dst []byte, r Result) []byte {
	if err := r.Validate(); err != nil {
		violated("encoding an invalid result: %v", err)
	}
	dst = append(dst, resultVersion, byte(r.Code))
	dst = le.AppendUint64(dst, r.Index)
	dst = le.AppendUint64(dst, r.Revision)
	dst = le.AppendUint16(dst, uint16(len(r.Message)))
	return append(dst, r.Message...)
}

// Marshal returns the encoding of r (which must validate).
func (r Result) Marshal() []byte {
	return AppendResult(make([]byte, 0, resultHeaderBytes+len(r.Message)), r)
}

// DecodeResult decodes a result strictly: the bytes it accepts are exactly
// the encoding of the result it returns. Errors wrap ErrBadResult.
func DecodeResult(b []byte) (Result, error) {
	if len(b) < resultHeaderBytes {
		return Result{}, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrBadResult, len(b), resultHeaderBytes)
	}
	if b[0] != resultVersion {
		return Result{}, fmt.Errorf("%w: format version %d, want %d", ErrBadResult, b[0], resultVersion)
	}
	n := int(le.Uint16(b[18:]))
	if n > messageBytesMax || len(b) != resultHeaderBytes+n {
		return Result{}, fmt.Errorf("%w: message of %d bytes in %d bytes", ErrBadResult, n, len(b))
	}
	r := Result{Code: Code(b[1]), Index: le.Uint64(b[2:]), Revision: le.Uint64(b[10:]), Message: string(b[resultHeaderBytes:])}
	if err := r.Validate(); err != nil {
		return Result{}, err
	}
	return r, nil
}

// badCommand answers data that failed to decode. The message is the
// decoder's, clipped: deterministic for the same bytes.
func badCommand(index uint64, err error) Result {
	msg := err.Error()
	if len(msg) > messageBytesMax {
		msg = msg[:messageBytesMax]
	}
	for !utf8.ValidString(msg) {
		msg = msg[:len(msg)-1]
	}
	return Result{Code: CodeBadCommand, Index: index, Message: msg}
}
