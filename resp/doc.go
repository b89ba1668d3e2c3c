// Package resp encodes commands and parses replies of the Redis
// serialization protocol, RESP2 and RESP3, for the lock hot path.
//
// Encoders append to a caller's buffer and never allocate:
//
//	buf = resp.AppendArrayHeader(buf[:0], 6)
//	buf = resp.AppendBulkString(buf, "SET")
//	buf = resp.AppendBulkString(buf, key)
//	buf = resp.AppendBulkString(buf, token)
//	buf = resp.AppendBulkString(buf, "NX")
//	buf = resp.AppendBulkString(buf, "PX")
//	buf = resp.AppendBulkInt(buf, ttlMilliseconds)
//
// Parse parses one frame from a byte slice; a Reader reads frames from a
// stream. Scalar replies are parsed without allocating: their Value points
// into the buffer they were read from.
//
// The parser treats the network as hostile. Every length and count is
// checked against Limits before it is trusted, aggregates are parsed with an
// explicit stack bounded by the depth limit, the grammar is strict (exact
// CRLF, no leading zeros, no '+' in integers), and memory is committed only
// as bytes arrive, never from a declared length. Within limits, what Redis
// servers write parses, odd as some of it is: a NaN spelled "-nan", a big
// number whose text a script chose, an aggregate as a map key. Attributes are checked under
// the same limits and skipped. A Reader waits for a bulk payload to arrive
// whole before parsing again, and resumes an unfinished aggregate where it
// stopped, so a reply trickling in costs time linear in its size.
//
// # Concurrency
//
// A Reader is not safe for concurrent use: one goroutine reads a stream.
// Parse, the Append functions and the methods of Value are safe to call
// concurrently as long as their buffers are not written meanwhile.
//
// A Value returned by a Reader points into the Reader's buffer and element
// memory and stays valid until the next ReadReply or Reset on that Reader; a
// Value returned by Parse points into the parsed slice. Use Value.Clone to
// keep a Value longer, and Value.Err to keep an error reply as an error.
//
// # Errors
//
// Three kinds of error keep "need more bytes" apart from "bad bytes":
//
//   - ErrIncomplete, from Parse only: the buffer holds a prefix of a frame
//     that may still be valid. Read more and parse again from the start. A
//     Reader does this itself.
//   - *ProtocolError: the bytes cannot be a valid frame. Its Offset locates
//     the first bad byte from the start of the frame. The stream cannot be
//     resynchronised: close the connection. A Reader stays poisoned and
//     returns the same error from every later ReadReply.
//   - ErrTooLarge, wrapped by a *ProtocolError: the frame exceeds one of the
//     Limits. Test it with errors.Is(err, resp.ErrTooLarge).
//
// A Reader returns the errors of the underlying io.Reader as they are, so a
// timeout still matches os.ErrDeadlineExceeded; io.EOF when the stream ends
// between frames, io.ErrUnexpectedEOF when it ends within one.
//
// An error reply from the server is not a Go error: it is a Value of Type
// TypeError or TypeBulkError. Value.Err turns it into a *ServerError, whose
// Code method returns its first word ("NOSCRIPT", "MOVED", ...); ErrorCode
// does the same on the raw bytes without allocating.
package resp
