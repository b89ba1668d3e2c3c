package conn

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// Defaults of Options. A zero field of Options means its default.
const (
	// DefaultDialTimeout bounds a dial and its handshake.
	DefaultDialTimeout = 2 * time.Second
	// DefaultCommandTimeout bounds a Do whose context has no deadline.
	DefaultCommandTimeout = 5 * time.Second
	// DefaultUserTimeout is how long sent data may stay unacknowledged
	// before the kernel drops the connection (TCP_USER_TIMEOUT, Linux only).
	DefaultUserTimeout = 10 * time.Second
	// DefaultKeepAlive is the TCP keep-alive period.
	DefaultKeepAlive = 15 * time.Second
	// DefaultBackoffMin and DefaultBackoffMax bound the jittered delay
	// between failed dials.
	DefaultBackoffMin = 10 * time.Millisecond
	DefaultBackoffMax = time.Second
)

// Protocol is a version of the protocol a connection speaks.
type Protocol int

// Protocol versions for Options.Protocol.
const (
	// ProtocolAuto asks for RESP3 and falls back to RESP2.
	ProtocolAuto Protocol = 0
	// ProtocolRESP2 speaks RESP2 only.
	ProtocolRESP2 Protocol = 2
	// ProtocolRESP3 requires RESP3; a server without it is an error.
	ProtocolRESP3 Protocol = 3
)

// Options configures a Conn. The zero value is usable.
type Options struct {
	// Username and Password authenticate the connection. They override
	// the user information of the address.
	Username, Password string
	// TLSConfig is used for rediss:// addresses. Nil means a default
	// configuration that verifies the server against the system roots.
	TLSConfig *tls.Config
	// DialTimeout bounds one dial with its handshake (DefaultDialTimeout).
	DialTimeout time.Duration
	// CommandTimeout bounds Do when its context has no deadline
	// (DefaultCommandTimeout).
	CommandTimeout time.Duration
	// UserTimeout is TCP_USER_TIMEOUT on Linux (DefaultUserTimeout);
	// negative disables it.
	UserTimeout time.Duration
	// KeepAlive is the TCP keep-alive period (DefaultKeepAlive); negative
	// disables keep-alive.
	KeepAlive time.Duration
	// BackoffMin and BackoffMax bound the jittered wait between failed
	// dials (DefaultBackoffMin, DefaultBackoffMax).
	BackoffMin, BackoffMax time.Duration
	// ClientName is sent with SETNAME when not empty.
	ClientName string
	// Protocol is ProtocolAuto, ProtocolRESP2 or ProtocolRESP3.
	Protocol Protocol
	// Limits bound what the reply parser accepts; zero fields are the
	// resp defaults.
	Limits resp.Limits
	// OnPush receives RESP3 push frames (invalidations, pub/sub messages).
	// It is called on the goroutine that reads the connection, one push at
	// a time and in the order they arrived among the replies, with a value
	// that is valid only during the call, and must not block or call back
	// into the Conn. A push that its receiver cannot accept (a malformed
	// invalidation) is refused with an error: the connection is then
	// closed, as after a protocol error, with an error that matches
	// ErrUnexpectedReply and the returned one. Nil drops pushes.
	OnPush func(resp.Value) error
	// OnFinish is told of each call the moment it is finished: its reply
	// delivered, its error set, or its caller gone (Abandon, or the end of
	// Wait's context). It is called in the order of the connection, before
	// any later frame is handled (OnPush), so that a receiver of pushes can
	// tell which calls were answered before a push. It is called with the
	// Conn's lock held, on whichever goroutine finished the call, and may
	// read the call's Reply and Err; it must be quick, must not block, and
	// must not call into the Conn or into anything that does.
	OnFinish func(call *Call)
	// OnCarriedReply is told of the reply to each carried command
	// (Call.Carry) whose caller let go of it, the moment the reply is read:
	// the command's bytes, its CarryUntil and Label, and the reply, valid
	// only during the call. It is called with the Conn's lock held; it
	// must be quick, must not block, and must not call into the Conn or
	// into anything that does. A Redis Cluster member follows the
	// redirects such a command meets.
	OnCarriedReply func(command []byte, until time.Time, label string, reply resp.Value)
	// NoDialOnSend keeps Send from dialling: while the connection is down,
	// Send fails a call at once with an error matching ErrNotConnected,
	// unless a dial that Connect started is in progress, which then
	// carries it. It is for a connection that its owner dials with Connect
	// only, and that must know which of its connections carried a command
	// (one that enables a mode, such as key tracking, after each dial).
	NoDialOnSend bool
	// OnConnect is called after each successful handshake with the
	// server's address (as Conn.Address returns it) and run_id, before the
	// connection carries a command and before Connect returns: what it
	// records is in place when the caller goes on. It must not block or
	// call back into the Conn.
	OnConnect func(address, runID string)
	// OnUnfinished is told of each carried command (Call.Carry) that could
	// not be finished, with the server's address (as Conn.Address returns
	// it). It is called without the Conn's lock, on a goroutine of the Conn
	// or of Close, and must not block.
	OnUnfinished func(address string, unfinished Unfinished)
	// Scripts are loaded with SCRIPT LOAD after each handshake, so that
	// EVALSHA rarely meets NOSCRIPT.
	Scripts []*Script
	// AskPersistence makes the handshake also ask CONFIG GET appendfsync,
	// for Conn.FsyncAlways. A refusal (an ACL without +config|get) is not
	// an error: the answer is then "not always".
	AskPersistence bool
}

func (o Options) withDefaults() (Options, error) {
	setDefault := func(field *time.Duration, value time.Duration) {
		if *field == 0 {
			*field = value
		}
	}
	setDefault(&o.DialTimeout, DefaultDialTimeout)
	setDefault(&o.CommandTimeout, DefaultCommandTimeout)
	setDefault(&o.UserTimeout, DefaultUserTimeout)
	setDefault(&o.KeepAlive, DefaultKeepAlive)
	setDefault(&o.BackoffMin, DefaultBackoffMin)
	setDefault(&o.BackoffMax, DefaultBackoffMax)
	switch {
	case o.DialTimeout < 0:
		return o, fmt.Errorf("%w: DialTimeout %v is negative", ErrInvalidOptions, o.DialTimeout)
	case o.CommandTimeout < 0:
		return o, fmt.Errorf("%w: CommandTimeout %v is negative", ErrInvalidOptions, o.CommandTimeout)
	case o.BackoffMin < 0 || o.BackoffMax < o.BackoffMin:
		return o, fmt.Errorf("%w: backoff range %v..%v", ErrInvalidOptions, o.BackoffMin, o.BackoffMax)
	case o.Protocol != ProtocolAuto && o.Protocol != ProtocolRESP2 && o.Protocol != ProtocolRESP3:
		return o, fmt.Errorf("%w: Protocol %d (want 0, 2 or 3)", ErrInvalidOptions, o.Protocol)
	}
	if err := o.Limits.Validate(); err != nil {
		return o, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	for i, script := range o.Scripts {
		if script == nil {
			return o, fmt.Errorf("%w: Scripts[%d] is nil", ErrInvalidOptions, i)
		}
	}
	return o, nil
}
