package safety

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// commandTimeout bounds Command when ctx has no earlier deadline.
const commandTimeout = 5 * time.Second

// Command sends one command to the Redis server at address, a loopback
// "host:port", over a connection of its own, and returns the reply, an
// error reply included. It is the nemesis's and the checker's way to talk
// to nodes without any client of the project in between; unlike
// redistest.Server.Do it reports errors instead of failing a test, so it
// may run on any goroutine.
func Command(ctx context.Context, address string, args ...string) (resp.Value, error) {
	deadline := time.Now().Add(commandTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var dialer net.Dialer
	dialContext, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, err := dialer.DialContext(dialContext, "tcp", address)
	if err != nil {
		return resp.Value{}, fmt.Errorf("safety: %s: %w", address, err)
	}
	defer c.Close()
	if err := c.SetDeadline(deadline); err != nil {
		return resp.Value{}, fmt.Errorf("safety: %s: %w", address, err)
	}
	if _, err := c.Write(resp.AppendCommand(nil, args...)); err != nil {
		return resp.Value{}, fmt.Errorf("safety: %s: %s: %w", address, args[0], err)
	}
	reply, err := resp.NewReader(c, resp.Limits{MaxBulkLength: resp.HardMaxBulkLength}).ReadReply()
	if err != nil {
		return resp.Value{}, fmt.Errorf("safety: %s: %s: %w", address, args[0], err)
	}
	return reply.Clone(), nil
}
