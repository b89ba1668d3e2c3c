package conn

import (
	"errors"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// callState says where a Call is. It is guarded by the mutex of the Conn the
// call was sent on.
type callState uint8

const (
	callIdle   callState = iota // not sent, or finished
	callQueued                  // sent; its reply has not been delivered
)

// errAbandoned is the error of a call whose caller stopped waiting for it
// because its outcome no longer mattered (Conn.Abandon).
var errAbandoned = errors.New("conn: call abandoned")

// Call is one command and, once Wait returned, its reply. A Call belongs to
// one caller and is meant to be reused: its buffers are kept, so a caller
// that reuses its Call does not allocate in steady state.
//
// A Call is not safe for concurrent use, and it must not be changed or sent
// again while it is in flight (between Send and the return of Wait or
// Abandon).
type Call struct {
	// Command is the encoded command. Build it with the resp encoders or
	// with SetScript, appending to Command[:0] to reuse its memory.
	Command []byte
	// Reply is the server's answer. A server error reply is a Reply of
	// type resp.TypeError, not an Err. Reply stays valid until the Call is
	// sent again.
	Reply resp.Value
	// Err is the transport failure that kept the reply from arriving, or
	// nil. When Err is set, the command may or may not have been applied by
	// the server, unless Err matches ErrNotConnected.
	Err error
	// Latency is the time from Send to the delivery of the reply or error.
	Latency time.Duration

	// Carry marks a command that must take effect whether or not anybody
	// waits for its reply, such as the release of a lock: when its caller
	// stops waiting, the Conn still reads its reply; when the connection
	// fails before the reply came, the Conn sends the command again on the
	// next connection, dialling in the background, until it is answered or
	// CarryUntil has passed. It must be safe to run twice (idempotent), and
	// must not be an EVALSHA (use SetEval): nobody would be there to answer
	// NOSCRIPT. A carried command that could not be finished is reported to
	// Options.OnUnfinished, with Label.
	Carry bool
	// CarryUntil is when a carried command stops mattering: after it, the
	// Conn may drop the command instead of sending it again.
	CarryUntil time.Time
	// Label names a carried command in reports.
	Label string
	// Deliver marks a command that must reach the server it was sent to
	// even when its caller stops waiting while the connection that is to
	// carry it is still being dialled, such as a lock's acquisition: it
	// is written when the dial completes, in its place among the commands
	// sent after it, and its reply is dropped. Unlike a carried command it
	// is never sent again: when the dial fails, it is dropped.
	Deliver bool

	// sentOn is the Conn the call was last sent on: its owner's to read.
	sentOn *Conn

	// script is set by SetScript: on NOSCRIPT the call is sent again with
	// EVAL. scriptTail is the offset in Command of the part shared by
	// EVALSHA and EVAL (numkeys, keys and arguments); arrayLength is the
	// command's element count.
	script      *Script
	scriptTail  int
	arrayLength int

	// The fields below are guarded by the mutex of the Conn the call was
	// sent on.
	state     callState
	waiting   bool  // the owner is blocked in Wait; set with queue.setWaiting
	abandoned bool  // the owner stopped waiting before the reply came
	retried   bool  // the NOSCRIPT fallback was sent
	followed  bool  // SendFollowed sends another call behind it: Send leaves it in the buffer
	follow    *Call // the call SendFollowed sent behind this one; nil after a plain Send
	sentAt    time.Time
	deadline  time.Time
	slot      int           // the call's slot in the Conn's queue, while it is queued
	wake      chan struct{} // buffered, one token; made on the first Send
	storage   []byte        // holds the bytes of Reply
	elems     []resp.Value  // holds the elements of an aggregate Reply
}

// SetScript starts Command as "EVALSHA sha numKeys" for a command with
// numKeys keys and numArguments further arguments, which the caller then
// appends with the resp encoders. When the server answers NOSCRIPT, the
// Conn sends the same command again as EVAL with the script's source.
func (c *Call) SetScript(script *Script, numKeys, numArguments int) {
	c.arrayLength = 3 + numKeys + numArguments
	c.Command = resp.AppendArrayHeader(c.Command[:0], c.arrayLength)
	c.Command = resp.AppendBulkString(c.Command, "EVALSHA")
	c.Command = resp.AppendBulkString(c.Command, script.SHA)
	c.scriptTail = len(c.Command)
	c.Command = resp.AppendBulkInt(c.Command, int64(numKeys))
	c.script = script
	c.clearCarry()
}

// SetEval starts Command as "EVAL source numKeys", like SetScript but with
// the script's source. It needs no NOSCRIPT fallback, so it suits calls
// whose replies are not awaited.
func (c *Call) SetEval(script *Script, numKeys, numArguments int) {
	c.Command = resp.AppendArrayHeader(c.Command[:0], 3+numKeys+numArguments)
	c.Command = resp.AppendBulkString(c.Command, "EVAL")
	c.Command = resp.AppendBulkString(c.Command, script.Source)
	c.Command = resp.AppendBulkInt(c.Command, int64(numKeys))
	c.script = nil
	c.clearCarry()
}

// CopyCommand makes the call's command a copy of other's, script, carry
// and delivery included, so that one encoded command can be sent to many
// servers.
func (c *Call) CopyCommand(other *Call) {
	c.Command = append(c.Command[:0], other.Command...)
	c.script, c.scriptTail, c.arrayLength = other.script, other.scriptTail, other.arrayLength
	c.Carry, c.CarryUntil, c.Label = other.Carry, other.CarryUntil, other.Label
	c.Deliver = other.Deliver
}

// clearCarry makes a new command neither carried nor delivered: a command
// is so only when its caller says so after building it.
func (c *Call) clearCarry() {
	c.Carry, c.CarryUntil, c.Label, c.Deliver = false, time.Time{}, "", false
}

// SentOn returns the Conn the call was last sent on, nil before its
// first Send: the one to Wait on, Collect or Abandon it.
func (c *Call) SentOn() *Conn { return c.sentOn }

// FollowedBy returns the call that Conn.SendFollowed sent behind this
// one in its last send, nil when that send was a plain Send, or when
// the call was not sent (Fail). A call sent again elsewhere, after a
// redirect say, has none: the follow-up then tells nothing of the server
// that answered.
func (c *Call) FollowedBy() *Call { return c.follow }

// Deadline returns the deadline the call was last sent with (see
// Conn.Send), zero before its first Send. Read it once Wait returned.
func (c *Call) Deadline() time.Time { return c.deadline }

// Fail finishes the call with err without sending it, as Send does when
// no connection can take it, for a caller that routes calls to Conns
// itself and found none: SentOn is then nil, and the call needs no Wait.
func (c *Call) Fail(err error) {
	c.sentOn, c.follow = nil, nil
	c.Reply, c.Err, c.Latency = resp.Value{}, err, 0
	c.state, c.abandoned, c.retried = callIdle, false, false
}

// Abandoned reports whether the call's caller stopped waiting for it before
// its reply arrived, with Conn.Abandon or because the context given to
// Conn.Wait ended. Its outcome is unknown; Err says why it was abandoned.
func (c *Call) Abandoned() bool { return c.abandoned }

// Reset empties Command for a new command that is not a script, and makes
// it neither carried nor delivered.
func (c *Call) Reset() {
	c.Command = c.Command[:0]
	c.script = nil
	c.clearCarry()
}

// appendEval appends the EVAL form of the call's script command to dst.
func (c *Call) appendEval(dst []byte) []byte {
	dst = resp.AppendArrayHeader(dst, c.arrayLength)
	dst = resp.AppendBulkString(dst, "EVAL")
	dst = resp.AppendBulkString(dst, c.script.Source)
	return append(dst, c.Command[c.scriptTail:]...)
}

// isNoScript reports whether value is the NOSCRIPT error reply to this
// call's EVALSHA, which must be answered by sending EVAL.
func (c *Call) isNoScript(value resp.Value) bool {
	return c.script != nil && !c.retried && value.Type == resp.TypeError &&
		string(resp.ErrorCode(value.Str)) == "NOSCRIPT"
}

// setReply copies value into the call's own memory: value points into the
// reader's buffer, which the next read overwrites, and the call's owner may
// look at its reply much later. The memory is the last reply's, reused:
// a Reply is valid until the call is sent again.
func (c *Call) setReply(value resp.Value) {
	if value.Elems != nil {
		c.Reply, c.elems, c.storage = value.CloneInto(c.elems, c.storage)
		return
	}
	if value.Str != nil {
		c.storage = append(c.storage[:0], value.Str...)
		value.Str = c.storage
	}
	c.Reply = value
}

// signal wakes the call's owner if it is blocked in Wait. A token left in
// the channel only causes one extra look at the state.
func (c *Call) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}
