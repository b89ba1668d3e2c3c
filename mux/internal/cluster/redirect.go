package cluster

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/resp"
)

// maxRedirects bounds the MOVED and ASK redirects one call follows inside a
// cluster: a slot that moves on and on is a cluster being resharded
// faster than it answers, and the call fails with ErrRedirectLoop.
const maxRedirects = 5

// TRYAGAIN replies: a command over several keys of a slot being migrated,
// which the importing master does not all have yet, is a passing state of
// the resharding, tried again after a backoff that doubles from
// tryAgainBackoffMin up to tryAgainBackoffMax.
const (
	// maxTryAgains bounds the tries of a call whose caller waits, within
	// the call's deadline.
	maxTryAgains       = 5
	tryAgainBackoffMin = 5 * time.Millisecond
	tryAgainBackoffMax = 200 * time.Millisecond
)

// Wait waits for call's reply where it was sent, and follows the MOVED and
// ASK redirects it gets (see await). A TRYAGAIN reply is tried again,
// at most maxTryAgains times and within the call's deadline; a carried
// call still answered TRYAGAIN then goes on in the background (see
// carryThrough), and its caller gets the TRYAGAIN reply.
func (c *Cluster) Wait(ctx context.Context, call *conn.Call) {
	if c.await(ctx, call, call.Deadline(), maxTryAgains) && call.Carry {
		c.carryThrough(call)
	}
}

// await waits for call's reply where it was sent, and follows the MOVED
// and ASK redirects it gets. An ASK is followed on a connection of its
// own, made for it: ASKING lets the one command after it into a slot being
// imported, and no other caller's command may come in between. After a
// TRYAGAIN reply, it sends call again to the master of its slot after a
// backoff, at most tries times, and while it can be sent by until. It
// reports whether it left call with a TRYAGAIN reply.
func (c *Cluster) await(ctx context.Context, call *conn.Call, until time.Time, tries int) (tryAgain bool) {
	var asked []*conn.Conn // the connections made for ASK redirects
	closeAsked := func() {
		if follow := call.FollowedBy(); follow != nil && slices.Contains(asked, follow.SentOn()) {
			settle(ctx, follow) // answered before its connection closes
		}
		for _, private := range asked {
			go private.Close() // the reply came, or the call is carried to its end
		}
		asked = asked[:0]
	}
	defer closeAsked()
	var backoff time.Duration
	for redirects := 0; ; redirects++ {
		sentOn := call.SentOn()
		if sentOn == nil {
			return false // not sent (see Send)
		}
		sentOn.Wait(ctx, call)
		if call.Err != nil && !call.Abandoned() {
			c.Unreachable()
		}
		if call.Err != nil || call.Abandoned() || call.Reply.Type != resp.TypeError {
			return false
		}
		follow := call.FollowedBy() // sent again with the call, where the call goes (refollow)
		if isTryAgain(call.Reply.Str) {
			closeAsked() // answered: a try asks anew
			backoff = conn.NextBackoff(backoff, 0, tryAgainBackoffMin, tryAgainBackoffMax)
			if tries == 0 || !c.sendAgain(ctx, call, follow, backoff, until) {
				return true
			}
			tries--
			redirects = -1 // each try follows its own redirects
			continue
		}
		redirect, ok := ParseRedirect(call.Reply.Str)
		if !ok {
			return false
		}
		if redirects == maxRedirects {
			call.Fail(fmt.Errorf("%w: %s: %d redirects, the last %q", ErrRedirectLoop, c.name, redirects+1, call.Reply.Str))
			return false
		}
		if redirect.ask {
			if private := c.ask(ctx, call, follow, redirect.hostPort); private != nil {
				asked = append(asked, private)
			}
			continue
		}
		target, err := c.Moved(redirect)
		if err != nil {
			call.Fail(fmt.Errorf("mux: %s: redirected to %s: %w", c.name, redirect.hostPort, err))
			return false
		}
		c.refollow(ctx, target, redirect.hostPort, call, follow, time.Now().Add(c.options.RequestTimeout))
	}
}

// isTryAgain reports whether an error reply is TRYAGAIN.
func isTryAgain(text []byte) bool { return string(resp.ErrorCode(text)) == "TRYAGAIN" }

// sendAgain sends call again to the master of its slot after pause, its
// reply due by until or within the request timeout, whichever comes
// first, followed by follow when it is not nil (see refollow). It reports
// false, and leaves call as it is, when ctx ends first, when it could not
// send by until, or when the node is closed.
func (c *Cluster) sendAgain(ctx context.Context, call, follow *conn.Call, pause time.Duration, until time.Time) bool {
	if time.Now().Add(pause).After(until) {
		return false
	}
	timer := time.NewTimer(pause)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return false
	}
	deadline := minTime(until, time.Now().Add(c.options.RequestTimeout))
	if follow != nil {
		slot := AnySlot
		if key, ok := routingKey(call.Command); ok {
			slot = SlotOf(key)
		}
		if master, hostPort := c.slots.Load().route(slot); master != nil {
			c.refollow(ctx, master, hostPort, call, follow, deadline)
			return true
		}
	}
	c.SendTo(c.route(call.Command), call, deadline)
	if sentOn := call.SentOn(); sentOn != nil {
		sentOn.Flush()
	}
	return true
}

// carryThrough tries a carried call answered TRYAGAIN again, with a copy
// of its command, on a goroutine of its own, after a backoff each time,
// until its CarryUntil: a release whose keys a resharding has split
// between two masters reaches them once they have all moved. A call
// still answered TRYAGAIN then is reported to Options.OnUnfinished.
func (c *Cluster) carryThrough(call *conn.Call) {
	if !time.Now().Before(call.CarryUntil) {
		return
	}
	carried := &conn.Call{Command: bytes.Clone(call.Command), Carry: true, CarryUntil: call.CarryUntil, Label: call.Label}
	go func() {
		ctx, cancel := context.WithDeadline(context.Background(), carried.CarryUntil)
		defer cancel()
		if !c.sendAgain(ctx, carried, nil, tryAgainBackoffMin, carried.CarryUntil) ||
			!c.await(ctx, carried, carried.CarryUntil, math.MaxInt) {
			return
		}
		if onUnfinished := c.connOptions.OnUnfinished; onUnfinished != nil {
			onUnfinished(c.name, conn.Unfinished{Label: carried.Label, Err: fmt.Errorf("mux: %s: %s", c.name, carried.Reply.Str)})
		}
	}()
}

// carriedReply follows, on a goroutine of its own, the redirect that a
// carried command whose caller let go of it met (a release that the
// round no longer waited for): a release that a resharding or a failover
// sent elsewhere still reaches its key. A TRYAGAIN is tried again (see
// carryThrough). A carried command may run twice. The Conn calls it with
// its lock held (conn.Options.OnCarriedReply).
func (c *Cluster) carriedReply(command []byte, until time.Time, label string, reply resp.Value) {
	if reply.Type != resp.TypeError {
		return
	}
	if isTryAgain(reply.Str) {
		c.carryThrough(&conn.Call{Command: command, Carry: true, CarryUntil: until, Label: label})
		return
	}
	to, ok := ParseRedirect(reply.Str)
	if !ok {
		return
	}
	call := &conn.Call{Command: bytes.Clone(command), Carry: true, CarryUntil: until, Label: label}
	go c.follow(call, to)
}

// follow sends call where the redirect to points, and waits for its reply
// until its CarryUntil, following further redirects (see Wait); a call
// still unanswered then is carried by the connection it was sent on.
func (c *Cluster) follow(call *conn.Call, to Redirect) {
	ctx, cancel := context.WithDeadline(context.Background(), call.CarryUntil)
	defer cancel()
	if to.ask {
		private := c.ask(ctx, call, nil, to.hostPort)
		if private == nil {
			return
		}
		defer private.Close()
	} else {
		target, err := c.Moved(to)
		if err != nil {
			return
		}
		target.Send(call, time.Now().Add(c.options.RequestTimeout))
		target.Flush()
	}
	c.Wait(ctx, call)
}

// Asked reports whether call was last sent on a connection made for an
// ASK redirect (see ask), to the master its slot is being migrated to.
func (c *Cluster) Asked(call *conn.Call) bool {
	sentOn := call.SentOn()
	if sentOn == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, server := range c.servers {
		if server == sentOn {
			return false
		}
	}
	return true
}

// ask sends call, after ASKING, to the master at hostPort on a connection
// of its own, followed by follow when it is not nil (see refollow), and
// returns the connection for the caller to close once the replies came;
// nil when it failed the call.
func (c *Cluster) ask(ctx context.Context, call, follow *conn.Call, hostPort string) *conn.Conn {
	private, err := c.passingConn(hostPort)
	if err != nil {
		call.Fail(fmt.Errorf("mux: %s: asked to %s: %w", c.name, hostPort, err))
		return nil
	}
	asking := &conn.Call{Command: resp.AppendCommand(nil, "ASKING")}
	if err := private.Do(ctx, asking); err != nil || asking.Reply.IsError() {
		if err == nil {
			err = asking.Reply.Err()
		}
		call.Fail(fmt.Errorf("mux: %s: asked to %s: ASKING: %w", c.name, hostPort, err))
		go private.Close()
		return nil
	}
	c.refollow(ctx, private, hostPort, call, follow, time.Now().Add(c.options.RequestTimeout))
	return private
}

// Collect takes call's reply if it arrived (conn.Conn.Collect). The reply
// of a carried call that its caller lets go of without reading it
// (Group.Discard) is looked at still: a redirect is followed, as for the
// reply of a carried call that its connection reads (carriedReply).
func (c *Cluster) Collect(call *conn.Call) bool {
	sentOn := call.SentOn()
	if sentOn == nil {
		return true
	}
	if !sentOn.Collect(call) {
		return false
	}
	if call.Carry && call.Err == nil && !call.Abandoned() {
		c.carriedReply(call.Command, call.CarryUntil, call.Label, call.Reply)
	}
	return true
}

// Abandon lets go of call where it was sent (conn.Conn.Abandon).
func (c *Cluster) Abandon(call *conn.Call) {
	if sentOn := call.SentOn(); sentOn != nil {
		sentOn.Abandon(call)
	}
}

// Moved records that to's slot is now served by the master it names, in
// a copy of the map, which lists that master if it did not, has the whole
// map read again in the background, and returns the master's connection.
func (c *Cluster) Moved(to Redirect) (*conn.Conn, error) {
	target, err := c.server(to.hostPort)
	if err != nil {
		return nil, err
	}
	if slots := c.slots.Load(); slots != nil && slots.owner[to.slot] != target {
		updated := *slots
		updated.owner[to.slot] = target
		if !slices.Contains(updated.masters, target) {
			updated.masters = append(slices.Clip(updated.masters), target)
			updated.hostPorts = append(slices.Clip(updated.hostPorts), to.hostPort)
		}
		updated.tagMasters()
		if c.slots.CompareAndSwap(slots, &updated) {
			c.mapChanged()
		}
	}
	c.stale.Store(true)
	c.ReadSlotsInBackground()
	return target, nil
}

// Redirect is a MOVED or ASK error reply: "MOVED slot host:port".
type Redirect struct {
	ask      bool
	slot     int
	hostPort string
}

// ParseRedirect reads a MOVED or ASK error reply.
func ParseRedirect(text []byte) (Redirect, bool) {
	var r Redirect
	var rest []byte
	switch {
	case len(text) > 6 && string(text[:6]) == "MOVED ":
		rest = text[6:]
	case len(text) > 4 && string(text[:4]) == "ASK ":
		r.ask, rest = true, text[4:]
	default:
		return r, false
	}
	slot, hostPort, ok := bytes.Cut(rest, []byte(" "))
	if !ok {
		return r, false
	}
	var err error
	if r.slot, err = strconv.Atoi(string(slot)); err != nil || r.slot < 0 || r.slot >= SlotCount || slot[0] == '+' {
		return r, false
	}
	host, port, err := net.SplitHostPort(string(hostPort))
	if err != nil || port == "" {
		return r, false
	}
	r.hostPort = net.JoinHostPort(host, port)
	return r, true
}
