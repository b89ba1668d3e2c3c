package cluster

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/lockmux/lockmux/conn"
)

// SendFollowed queues call on the master of its slot and, behind it on
// the same connection, in the same write, follow: script called by its
// SHA1 with one key, key followed by ":{tag}", tag being that master's
// hash tag (MasterTags), so that follow reads what that master held after
// it ran call (equal follow-ups share one read: conn.Conn.QueueFollowed). follow is waited for on the connection it was sent
// on (its SentOn), never redirected. A call that a MOVED, an ASK or a
// TRYAGAIN sends again is followed again where it goes, with the key of
// that master (see refollow). When the master is not known (the map
// cannot be read) or serves no slot, follow fails without being sent
// (conn.Call.Fail), and call is not followed (conn.Call.FollowedBy).
func (c *Cluster) SendFollowed(call, follow *conn.Call, script *conn.Script, key string, deadline time.Time) {
	slot := AnySlot
	if routing, ok := routingKey(call.Command); ok {
		slot = SlotOf(routing)
	}
	slots := c.slots.Load()
	if slots == nil {
		if _, err := c.firstSlots(call.Command, deadline); err != nil {
			call.Fail(fmt.Errorf("%w: %s: its slot map is not read: %w", conn.ErrNotConnected, c.name, err))
			follow.Fail(call.Err)
			return
		}
		slots = c.slots.Load()
	}
	master, i := slots.routeIndex(slot)
	if master == nil || i < 0 || i >= len(slots.tags) || slots.tags[i] == "" {
		c.SendTo(master, call, deadline)
		follow.Fail(fmt.Errorf("mux: %s: the master of slot %d has no hash tag to follow a command with", c.name, slot))
		return
	}
	follow.SetScript(script, 1, 0)
	follow.Command = appendTaggedKey(follow.Command, key, slots.tags[i])
	master.SendFollowed(call, follow, deadline)
}

// appendTaggedKey appends the bulk string key + ":{" + tag + "}".
func appendTaggedKey(dst []byte, key, tag string) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(key)+len(tag)+3), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, key...)
	dst = append(dst, ':', '{')
	dst = append(dst, tag...)
	return append(dst, '}', '\r', '\n')
}

// tagOf returns the hash tag of the master at hostPort in the slot map,
// "" when the map does not name it a master serving a slot.
func (c *Cluster) tagOf(hostPort string) string {
	slots := c.slots.Load()
	if slots == nil {
		return ""
	}
	if i := slices.Index(slots.hostPorts, hostPort); i >= 0 && i < len(slots.tags) {
		return slots.tags[i]
	}
	return ""
}

// settle waits for follow, the follow-up of a call about to be sent again,
// where it was sent, and reports whether it is done with, so that it can
// be sent again: false when ctx ended first (it stays abandoned in its
// connection's queue) or it is nil.
func settle(ctx context.Context, follow *conn.Call) bool {
	if follow == nil {
		return false
	}
	if sentOn := follow.SentOn(); sentOn != nil {
		sentOn.Wait(ctx, follow)
	}
	return !follow.Abandoned()
}

// refollow sends call again on server, the master at hostPort, with its
// reply due by deadline, and, when follow (call's follow-up before, SendFollowed's)
// is done with, follow behind it with the key of that master: the
// follow-up reads the master that runs the call. Otherwise, or when
// hostPort is not a master of the map, call goes alone, and is not
// followed.
func (c *Cluster) refollow(ctx context.Context, server *conn.Conn, hostPort string, call, follow *conn.Call, deadline time.Time) {
	if tag := c.tagOf(hostPort); tag != "" && settle(ctx, follow) {
		if command, ok := retag(follow.Command, tag); ok {
			follow.Command = command
			server.SendFollowed(call, follow, deadline)
			return
		}
	}
	server.Send(call, deadline)
	server.Flush()
}

// retag returns command, a follow-up built by SendFollowed, with the key
// of the master whose hash tag is tag, in the same buffer.
func retag(command []byte, tag string) ([]byte, bool) {
	_, rest, ok := arrayHeader(command)
	for range 3 { // EVALSHA, the script's SHA1, the number of keys
		if !ok {
			return command, false
		}
		_, rest, ok = bulkString(rest)
	}
	start := len(command) - len(rest)
	key, _, ok := bulkString(rest)
	cut := bytes.LastIndex(key, []byte(":{"))
	if !ok || cut < 0 {
		return command, false
	}
	prefix := string(key[:cut])
	return appendTaggedKey(command[:start], prefix, tag), true
}
