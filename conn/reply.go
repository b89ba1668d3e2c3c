package conn

import (
	"fmt"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// takePushLocked hands a push frame to Options.OnPush. On a RESP2
// connection, where no push can come, and for a push that OnPush refuses,
// it fails the link.
func (c *Conn) takePushLocked(link *link, value resp.Value) error {
	if link.protocol == ProtocolRESP2 {
		err := fmt.Errorf("%w: push frame on a RESP2 connection", ErrUnexpectedReply)
		c.failLinkLocked(link, err)
		return err
	}
	link.pushes.pushed(value)
	if onPush := c.options.OnPush; onPush != nil {
		c.mu.Unlock()
		err := onPush(value)
		c.mu.Lock()
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrUnexpectedReply, err)
			c.failLinkLocked(link, err)
			return err
		}
	}
	return nil
}

// takeRefusalLocked takes value as the answer of the oldest push command
// (see SendPush): an error is its refusal, handed to Listen's handler, or
// kept for the next Listen when none listens; any other reply fails the
// link.
func (c *Conn) takeRefusalLocked(link *link, value resp.Value) error {
	if !value.IsError() {
		err := fmt.Errorf("%w: a reply arrived for a push command", ErrUnexpectedReply)
		c.failLinkLocked(link, err)
		return err
	}
	if link.pushes.answersNext() {
		link.pushes.drop()
	}
	if refused := c.reader.refused; refused != nil {
		c.mu.Unlock()
		refused(value)
		c.mu.Lock()
	} else if link.refusal == nil {
		link.refusal = append([]byte(nil), value.Str...) // for the next Listen
	}
	return nil
}

// takeReplyLocked gives a reply to the oldest pending command: to its
// call, or, for a command whose caller stopped waiting, to nobody. A reply
// that no command asked for (R13) fails the link.
func (c *Conn) takeReplyLocked(link *link, value resp.Value) error {
	entry, ok := c.pending.pop()
	if !ok {
		err := fmt.Errorf("%w: a reply arrived that no command asked for", ErrUnexpectedReply)
		c.failLinkLocked(link, err)
		return err
	}
	link.pushes.replyTaken()
	if entry.carry {
		c.carrier.answered()
	}
	if entry.call != nil {
		c.deliverLocked(entry, value)
	} else if onCarried := c.options.OnCarriedReply; entry.carry && onCarried != nil {
		onCarried(entry.command, entry.until, entry.label, value)
	}
	c.takeRunLocked(entry, value)
	if c.address.MasterName != "" && value.IsError() && string(resp.ErrorCode(value.Str)) == "READONLY" {
		// The master was demoted: the next dial asks the sentinels again.
		err := fmt.Errorf("%w: %s answered %s", ErrNotMaster, link.address, value.Str)
		c.failLinkLocked(link, err)
		return err
	}
	return nil
}

// deliverLocked completes the entry's call with value. When the server
// does not know the call's script, the call is sent again as EVAL, but only
// if nothing was issued on the connection after it but its follow-up
// (SendFollowed), which is then sent again behind it: a replay must never
// run after a command issued later (a release, say, of what it would
// acquire). The follow-up may be one that others share (QueueFollowed):
// they were issued before the call, and keep the reply of the first read.
// Otherwise the NOSCRIPT error is the call's reply, and the script is
// loaded again for the calls to come.
func (c *Conn) deliverLocked(entry pending, value resp.Value) {
	call := entry.call
	if call.isNoScript(value) {
		onlyFollowUp := call.follow != nil && c.pending.find(call.follow) != nil && c.pending.isOneRun()
		if c.pending.len() == 0 || onlyFollowUp {
			call.retried = true
			entry.deadline = time.Now().Add(entry.span)
			c.pending.push(entry)
			c.writer.buffer = call.appendEval(c.writer.buffer)
			if onlyFollowUp {
				// The follow-up read the server before the replay: its
				// reply is dropped, and it is sent again behind the replay.
				followEntry := *c.pending.detach(call.follow)
				followEntry.call, followEntry.deadline = call.follow, entry.deadline
				followEntry.sharesNext = false
				c.pending.push(followEntry)
				c.writer.buffer = append(c.writer.buffer, call.follow.Command...)
			}
			if !c.writer.flushing {
				c.flushLocked()
			}
			return
		}
		c.writer.buffer = resp.AppendCommand(c.writer.buffer, "SCRIPT", "LOAD", call.script.Source)
		c.pending.push(pending{deadline: time.Now().Add(entry.span)})
	}
	call.setReply(value)
	call.Latency = time.Since(call.sentAt)
	call.state = callIdle
	c.finishedLocked(call)
	if call.waiting {
		call.signal()
	}
}
