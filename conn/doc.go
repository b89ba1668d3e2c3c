// Package conn is one pipelined connection to one Redis server.
//
// A [Conn] dials lazily, performs the handshake (HELLO 3 with AUTH and
// SETNAME, falling back to RESP2 AUTH and SELECT when the server does not
// speak RESP3), loads the configured Lua scripts, and then carries the
// commands of many callers at once. Callers build their command into a
// reusable [Call], [Conn.Send] it and [Conn.Wait] for the reply. Replies are
// matched to calls in FIFO order.
//
// There is no background reader goroutine. The caller that waits first reads
// the socket for everybody (leader/follower): it parses every reply that is
// already buffered, hands each one to its owner, and when its own reply has
// arrived passes the reading on to another waiting caller. A caller that is
// alone therefore reads its own reply with no goroutine switch, and under
// concurrency one read system call serves many callers. Writes are coalesced
// the same way: a caller appends its command to the connection's buffer, and
// whichever caller is already writing sends it along with its own.
//
// A connection that saw a timeout, a protocol error or any I/O error is
// closed at once and every call in flight on it fails: a late reply can
// never be read as the answer to another command. The next use dials again
// in the background, with jittered backoff, while callers fail fast instead
// of waiting for the dial.
//
// # Concurrency
//
// A [Conn] is safe for concurrent use. A [Call] belongs to one caller at a
// time and must not be reused until [Conn.Wait] returned for it, or it was
// abandoned with [Conn.Abandon].
//
// # Errors
//
// Transport failures are reported in [Call.Err] and name the server's
// address. A deadline that passed matches [os.ErrDeadlineExceeded]; a
// command that could not be sent because the connection is down matches
// [ErrNotConnected]; a closed Conn gives [ErrClosed]; rejected credentials
// or permissions during the handshake match [ErrAuth] and are not retried
// until the backoff has passed. A server's error reply is not a transport
// failure: it is the [Call.Reply], of type [resp.TypeError].
package conn
