package mux

import (
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/resp"
)

// Script is a Lua script that a command calls by its SHA1 digest with
// EVALSHA, or whole with EVAL. The connections load the scripts of
// Options.Scripts when they connect, so that EVALSHA rarely meets NOSCRIPT.
type Script struct {
	script *conn.Script
}

// NewScript returns the Script for a Lua source.
func NewScript(source string) *Script { return &Script{script: conn.NewScript(source)} }

// Source returns the script's Lua source.
func (s *Script) Source() string { return s.script.Source }

// SHA returns the hex SHA1 digest of the script, as Redis computes it.
func (s *Script) SHA() string { return s.script.SHA }

// command builds one command into a reusable buffer. Round and Request
// embed it: its methods are theirs.
type command struct {
	call conn.Call
}

// SetCommand makes the command the given arguments, the first being the
// command's name. It is for commands off the fast path: the arguments are
// strings.
func (c *command) SetCommand(arguments ...string) {
	c.call.Reset()
	c.call.Command = resp.AppendCommand(c.call.Command, arguments...)
}

// StartCommand starts a command of elements elements, the first being its
// name; the caller appends the others with AppendString, AppendBulk and
// AppendInt.
func (c *command) StartCommand(elements int, name string) {
	c.call.Reset()
	c.call.Command = resp.AppendArrayHeader(c.call.Command, elements)
	c.call.Command = resp.AppendBulkString(c.call.Command, name)
}

// SetScript starts the command as "EVALSHA sha numKeys" for a script with
// numKeys keys and numArguments further arguments, which the caller then
// appends. A server that does not know the script is answered with EVAL,
// when nothing was sent to it after the command (see conn.Call.SetScript).
func (c *command) SetScript(script *Script, numKeys, numArguments int) {
	c.call.SetScript(script.script, numKeys, numArguments)
}

// SetEval starts the command as "EVAL source numKeys", like SetScript but
// with the script's source: it never meets NOSCRIPT, which suits commands
// whose replies may not be awaited.
func (c *command) SetEval(script *Script, numKeys, numArguments int) {
	c.call.SetEval(script.script, numKeys, numArguments)
}

// AppendString appends an argument.
func (c *command) AppendString(argument string) {
	c.call.Command = resp.AppendBulkString(c.call.Command, argument)
}

// AppendBulk appends an argument given as bytes.
func (c *command) AppendBulk(argument []byte) {
	c.call.Command = resp.AppendBulk(c.call.Command, argument)
}

// AppendInt appends an integer argument.
func (c *command) AppendInt(argument int64) {
	c.call.Command = resp.AppendBulkInt(c.call.Command, argument)
}

// Carry marks the command, once built, as one that must take effect
// whether or not anybody waits for its reply, such as a release: the
// connection finishes it, and sends it again after a reconnection, until
// it is answered or until has passed; label names it in reports (see
// Options.OnUnfinished). It must be safe to run twice, and built with
// SetEval or without a script.
func (c *command) Carry(until time.Time, label string) {
	c.call.Carry, c.call.CarryUntil, c.call.Label = true, until, label
}

// Deliver marks the command, once built, as one that reaches every server
// it was sent to even when Wait stops waiting for it (the round was
// decided, or its context ended) while that server's connection is still
// being dialled, such as a lock's acquisition: the command is written
// when the dial completes, in order, and its reply is dropped (see
// conn.Call.Deliver).
func (c *command) Deliver() {
	c.call.Deliver = true
}
