// Package conn is one pipelined connection to one Redis server.
//
// A [Conn] dials lazily, performs the handshake (HELLO 3 with AUTH and
// SETNAME, falling back to RESP2 AUTH and SELECT when the server does not
// speak RESP3), loads the configured Lua scripts, and then carries the
// commands of many callers at once. Callers build their command into a
// reusable [Call], [Conn.Send] it and [Conn.Wait] for the reply. Replies are
// matched to calls in FIFO order.
//
// There is no background reader goroutine on the fast path. The caller that waits first reads
// the socket for everybody (leader/follower): it parses every reply that is
// already buffered, hands each one to its owner, and when its own reply has
// arrived passes the reading on to another waiting caller. A caller that is
// alone therefore reads its own reply with no goroutine switch, and under
// concurrency one read system call serves many callers. Writes are coalesced
// the same way: a caller appends its command to the connection's buffer, and
// whichever caller is already writing sends it along with its own.
//
// For a master that Redis Sentinel serves (an address of the
// redis-sentinel:// schemes, see [ParseAddress]), each dial first asks the
// sentinels where the master is and the handshake checks its ROLE; while
// the Conn is open, a goroutine of its own follows the sentinels'
// +switch-master announcements, and a switch, or a READONLY reply, closes
// the connection to the old master ([ErrNotMaster]): the next command
// dials the new one. With [Options.AskPersistence] the handshake also
// reads the server's appendfsync ([Conn.FsyncAlways]).
//
// # A call's life
//
// The deadline given to [Conn.Send] is the server's: a connection is
// closed only when a reply that somebody still needs is late past it. A
// caller's context bounds its own wait and nothing else: when it ends,
// [Conn.Wait] returns with the context's error and the call is abandoned.
// An abandoned call stays in the queue; its reply is read, in order, and
// dropped. A call marked [Call.Carry] (a release) is finished all the same:
// if nobody has read its reply by its deadline, the Conn's finisher
// goroutine reads it then, or fails the connection when it has not come;
// when the connection fails first, the command is sent again, first of
// all, on the next one, which the finisher dials, until it is answered or
// [Call.CarryUntil] has passed; what could not be finished is reported to
// [Options.OnUnfinished]. The finisher starts with the first carried call,
// sleeps while callers read the carried replies on their way, and ends
// with the Conn. An abandoned call that was waiting for a dial is not
// written, unless it is marked [Call.Deliver] (an acquisition): it is then
// written when the dial completes, in its place, and never sent again.
//
// A script call that meets NOSCRIPT is sent again as EVAL only when nothing
// was issued on the connection after it: commands run on the server in the
// order they were issued, and a replay never jumps the queue. Otherwise the
// NOSCRIPT error is the call's reply, and the script is loaded again.
//
// A connection that saw a timeout, a protocol error or any I/O error is
// closed at once and every call in flight on it fails: a late reply can
// never be read as the answer to another command. The next use dials again
// in the background, with jittered backoff (none after a dial that timed
// out: it waited already), while callers fail fast instead of waiting for
// the dial.
//
// # Pushes
//
// RESP3 push frames (pub/sub messages, key tracking invalidations) go to
// [Options.OnPush] as the reader meets them among the replies, and a push
// that OnPush refuses closes the connection like any protocol error.
// [Conn.Listen] reads a connection that waits for pushes without a
// command, and [Conn.SendPush] writes the commands answered by pushes.
// [Options.OnFinish] is told of each call the moment it is finished, in
// the same order, so that a receiver of pushes knows which replies came
// before a push; with [Options.NoDialOnSend] only Connect dials, so that
// the owner of a connection knows which of its connections carried a
// command. [Options.OnCarriedReply] is told of the replies to carried
// commands whose callers let go of them, which a Redis Cluster member
// reads for redirects.
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
