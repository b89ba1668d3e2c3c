package resp

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// ErrIncomplete is returned by Parse when the buffer holds only the start of
// a frame that may still turn out valid: read more bytes and parse again.
// A Reader never returns it.
var ErrIncomplete = errors.New("resp: incomplete frame")

// ErrTooLarge is wrapped by a *ProtocolError when a frame exceeds one of the
// Limits: a length, an element count, the nesting depth or a line length.
var ErrTooLarge = errors.New("resp: frame exceeds a limit")

// errInvalidRead is returned when the underlying io.Reader reports an
// impossible byte count.
var errInvalidRead = errors.New("resp: reader returned an invalid count")

// ProtocolError reports bytes that are not a valid RESP frame, or a frame
// beyond the Limits. The stream cannot be resynchronised after it: close the
// connection.
type ProtocolError struct {
	// Reason says what was wrong, for example "bulk length is negative".
	Reason string
	// Offset is the position of the offending byte, counted from the first
	// byte of the frame.
	Offset int
	// Err is ErrTooLarge when a limit tripped, and nil otherwise.
	Err error
}

// Error returns "resp: protocol error at offset N: reason".
func (e *ProtocolError) Error() string {
	return "resp: protocol error at offset " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Unwrap returns e.Err, so that errors.Is(err, ErrTooLarge) matches a
// tripped limit.
func (e *ProtocolError) Unwrap() error {
	return e.Err
}

// ServerError is an error reply sent by the server, such as
// "NOSCRIPT No matching script. Please use EVAL.".
type ServerError struct {
	// Message is the whole error text, its code first.
	Message string
}

// Error returns the server's message unchanged.
func (e *ServerError) Error() string {
	return e.Message
}

// Code returns the first word of the message, such as "NOSCRIPT", "MOVED"
// or "ERR", or the whole message when it has no space.
func (e *ServerError) Code() string {
	if i := strings.IndexByte(e.Message, ' '); i >= 0 {
		return e.Message[:i]
	}
	return e.Message
}

// ErrorCode returns the first word of an error reply's text, as
// ServerError.Code does, without allocating: the result aliases msg.
func ErrorCode(msg []byte) []byte {
	if i := bytes.IndexByte(msg, ' '); i >= 0 {
		return msg[:i]
	}
	return msg
}
