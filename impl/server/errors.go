package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/durableraft/durableraft/impl/kv"
	"github.com/durableraft/durableraft/impl/raft"
	"github.com/durableraft/durableraft/impl/replica"
)

// Error is a request's failure as clients see it: a code from errorTable,
// a message, whether the outcome is definite (the write was not and will
// not be applied, or was applied with this answer) or unknown, and the
// leader this node knows of.
type Error struct {
	Code       string
	Message    string
	Leader     raft.NodeID
	LeaderAddr string
	// Revision is the key's current revision, for a mismatch.
	Revision uint64
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Definite reports whether the outcome is definite.
func (e *Error) Definite() bool { return errorTable[e.Code].definite }

// Status is the HTTP status of the error.
func (e *Error) Status() int { return errorTable[e.Code].status }

// The error codes: the API's decision table (docs/raftd.md, "Outcomes").
// definite: the request's entry never reached the log (or was applied with
// this answer); otherwise it may be in the log and the outcome is unknown.
var errorTable = map[string]struct {
	status     int
	definite   bool
	retryAfter bool
	what       string
}{
	CodeBadRequest:        {http.StatusBadRequest, true, false, "malformed request: bad JSON, path, header or body"},
	CodeTooLarge:          {http.StatusRequestEntityTooLarge, true, false, "a key, value or body over its limit"},
	CodeNoSuchPath:        {http.StatusNotFound, true, false, "no such API path"},
	CodeMethod:            {http.StatusMethodNotAllowed, true, false, "method not allowed on this path"},
	CodeUnauthenticated:   {http.StatusUnauthorized, true, false, "TLS is on and the request needs a client certificate"},
	CodeForbidden:         {http.StatusForbidden, true, false, "the certificate's role does not allow the request, or it is a member's"},
	CodeNotFound:          {http.StatusNotFound, true, false, "the key is absent (a read, or a delete that applied)"},
	CodeMismatch:          {http.StatusConflict, true, false, "a CAS or conditional delete whose comparison failed at apply"},
	CodeNotLeader:         {http.StatusServiceUnavailable, true, true, "this node does not lead and did not forward (asked not to, or already forwarded)"},
	CodeNoLeader:          {http.StatusServiceUnavailable, true, true, "no leader known: an election is under way"},
	CodeLeaderUnreachable: {http.StatusServiceUnavailable, true, true, "forwarding failed before the request reached the leader"},
	CodeFenced:            {http.StatusServiceUnavailable, true, true, "this node is fenced (TRUNCATED, behind, or its hard state lost)"},
	CodeBusy:              {http.StatusServiceUnavailable, true, true, "too much in flight; retry later"},
	CodeWALFailed:         {http.StatusServiceUnavailable, true, true, "the node's WAL failed; it acknowledges nothing until restarted"},
	CodeLost:              {http.StatusServiceUnavailable, true, true, "the entry was replaced by a new leader's: never applied"},
	CodeSession:           {http.StatusServiceUnavailable, true, true, "a session refusal that executed nothing (window full, session limit)"},
	CodeStopping:          {http.StatusServiceUnavailable, true, true, "the node is stopping; the request was not proposed"},
	CodeUnknown:           {http.StatusGatewayTimeout, false, false, "the entry may be in the log and no answer came: the outcome is unknown"},
	CodeConfigPending:     {http.StatusConflict, true, true, "a membership change: the previous one is not committed yet (one change at a time)"},
	CodeConfigOwnTerm:     {http.StatusServiceUnavailable, true, true, "a membership change: the new leader has not committed an entry of its term yet"},
	CodeLearnerBehind:     {http.StatusConflict, true, true, "a promotion: the learner has not caught up with the commit index yet"},
	CodeRemovedID:         {http.StatusConflict, true, false, "a membership change naming a removed id: ids are never reused"},
	CodeChangeInvalid:     {http.StatusConflict, true, false, "a membership change the configuration does not allow (a member already, not a member, not a learner, the last voter)"},
	CodeInternal:          {http.StatusInternalServerError, false, false, "an internal error"},
}

// Error codes.
const (
	CodeBadRequest        = "bad_request"
	CodeTooLarge          = "too_large"
	CodeNoSuchPath        = "no_such_path"
	CodeMethod            = "method_not_allowed"
	CodeUnauthenticated   = "unauthenticated"
	CodeForbidden         = "forbidden"
	CodeNotFound          = "not_found"
	CodeMismatch          = "mismatch"
	CodeNotLeader         = "not_leader"
	CodeNoLeader          = "no_leader"
	CodeLeaderUnreachable = "leader_unreachable"
	CodeFenced            = "fenced"
	CodeBusy              = "busy"
	CodeWALFailed         = "wal_failed"
	CodeLost              = "lost"
	CodeSession           = "session_refused"
	CodeStopping          = "stopping"
	CodeUnknown           = "unknown_outcome"
	CodeSessionExpired    = "session_expired"
	CodeInternal          = "internal"
	CodeConfigPending     = "config_pending"
	CodeConfigOwnTerm     = "config_own_term"
	CodeLearnerBehind     = "learner_behind"
	CodeRemovedID         = "removed_id"
	CodeChangeInvalid     = "change_invalid"
)

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// proposeFailure maps a failed proposal to a client error. submitted says
// whether the proposal reached the replica's inbox: before that, nothing
// can be in the log.
func proposeFailure(err error, submitted bool) *Error {
	switch {
	case errors.Is(err, replica.ErrNotLeader):
		return errorf(CodeNotLeader, "%v", err)
	case errors.Is(err, replica.ErrFenced):
		return errorf(CodeFenced, "%v", err)
	case errors.Is(err, replica.ErrTooLarge):
		return errorf(CodeTooLarge, "%v", err)
	case errors.Is(err, replica.ErrBusy):
		return errorf(CodeBusy, "%v", err)
	case errors.Is(err, replica.ErrWAL):
		return errorf(CodeWALFailed, "%v", err)
	case errors.Is(err, replica.ErrLost):
		return errorf(CodeLost, "%v", err)
	case errors.Is(err, replica.ErrClosed) && !submitted:
		return errorf(CodeStopping, "%v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, replica.ErrClosed):
		return errorf(CodeUnknown, "no answer after the proposal reached the replica: %v", err)
	}
	if replica.Definite(err) {
		return errorf(CodeBusy, "%v", err)
	}
	return errorf(CodeUnknown, "%v", err)
}

// readFailure maps a failed read: nothing was written, so every read
// failure is definite.
func readFailure(err error) *Error {
	switch {
	case errors.Is(err, replica.ErrNotLeader):
		return errorf(CodeNotLeader, "%v", err)
	case errors.Is(err, replica.ErrFenced):
		return errorf(CodeFenced, "%v", err)
	case errors.Is(err, replica.ErrWAL):
		return errorf(CodeWALFailed, "%v", err)
	case errors.Is(err, replica.ErrClosed):
		return errorf(CodeStopping, "%v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errorf(CodeBusy, "the read was not confirmed in time: %v", err)
	}
	return errorf(CodeBusy, "%v", err)
}

// resultError maps a kv result that is not a success to a client error
// (nil for CodeOK).
func resultError(r kv.Result) *Error {
	switch r.Code {
	case kv.CodeOK:
		return nil
	case kv.CodeNotFound:
		return errorf(CodeNotFound, "not found")
	case kv.CodeMismatch:
		e := errorf(CodeMismatch, "the comparison failed: the key's revision is %d", r.Revision)
		e.Revision = r.Revision
		return e
	case kv.CodeSessionExpired:
		return errorf(CodeSessionExpired, "the session expired: an earlier attempt of this request may have been applied")
	case kv.CodeStale:
		return errorf(CodeUnknown, "a duplicate of a request the client acknowledged already")
	case kv.CodeWindowFull, kv.CodeSessionLimit:
		return errorf(CodeSession, "%v", r.Code)
	case kv.CodeBadCommand:
		return errorf(CodeBadRequest, "%s", r.Message)
	}
	return errorf(CodeInternal, "result %v", r)
}
