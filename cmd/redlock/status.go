package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"
)

// inspectTimeout bounds status and scan.
const inspectTimeout = 10 * time.Second

var statusHelp = commandHelp{
	name:     "status",
	synopsis: "redlock status [flags] KEY",
	about: `Show, for every node, whether it holds the lock KEY, the first characters of
the holder's token, the remaining TTL and the fencing counter, then whether a
quorum of nodes holds the same token, that is whether somebody holds the
lock. It only reads.`,
	examples: `redlock status --addrs 127.0.0.1:6379,127.0.0.1:6380,127.0.0.1:6381 jobs:nightly

# In a script: is anybody running the nightly job?
if redlock status jobs:nightly >/dev/null; then echo busy; fi`,
	exits: `0    a quorum of nodes holds the key: it is locked
1    no quorum holds the key: it is free (or split between holders)
64   bad usage or configuration
69   too few nodes answered to tell`,
}

func statusCommand(ctx context.Context, env *environment, args []string) int {
	var connection connectionFlags
	flags := newFlagSet(statusHelp)
	connection.register(flags, false)
	if status, ok := parseFlags(env, flags, statusHelp, args); !ok {
		return status
	}
	if flags.NArg() != 1 || flags.Arg(0) == "" {
		return usageError(env, statusHelp, "expected one KEY, got %d arguments", flags.NArg())
	}
	key := flags.Arg(0)
	inspector, status := connection.inspector(env, statusHelp)
	if inspector == nil {
		return status
	}
	defer inspector.Close()

	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	lock, err := inspector.Status(ctx, key)
	if err != nil {
		fmt.Fprintf(env.stderr, "redlock status: %v\n", err)
		return statusOf(err)
	}

	table := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "NODE\tHELD\tTOKEN\tTTL\tFENCE")
	for _, node := range lock.Nodes {
		switch {
		case node.Err != nil:
			fmt.Fprintf(table, "%s\t?\t\t\t\terror: %v\n", node.Address, node.Err)
		case !node.Held:
			fmt.Fprintf(table, "%s\tno\t-\t-\t%s\n", node.Address, fenceText(node.Fence))
		case node.Persistent:
			fmt.Fprintf(table, "%s\tyes\t%s\tnone (never expires: a leak?)\t%s\n", node.Address, node.TokenPrefix, fenceText(node.Fence))
		default:
			fmt.Fprintf(table, "%s\tyes\t%s\t%v\t%s\n", node.Address, node.TokenPrefix, node.TTL, fenceText(node.Fence))
		}
	}
	table.Flush()

	nodes := len(lock.Nodes)
	switch {
	case lock.Locked():
		fmt.Fprintf(env.stdout, "%q is locked: token %s… on %d of %d nodes (quorum %d)\n", key, lock.Holder, lock.Holders, nodes, lock.Need)
		return exitOK
	case lock.Answered < lock.Need:
		fmt.Fprintf(env.stdout, "unknown: only %d of %d nodes answered, and a quorum is %d\n", lock.Answered, nodes, lock.Need)
		return exitUnavailable
	case lock.Holders == 0:
		fmt.Fprintf(env.stdout, "%q is free: no node holds it\n", key)
	default:
		fmt.Fprintf(env.stdout, "%q is not locked: the most common token, %s…, is on %d of %d nodes, short of the quorum %d\n",
			key, lock.Holder, lock.Holders, nodes, lock.Need)
	}
	return exitFailed
}

// fenceText shows a fencing counter, or "-" when there is none.
func fenceText(fence int64) string {
	if fence == 0 {
		return "-"
	}
	return fmt.Sprint(fence)
}
