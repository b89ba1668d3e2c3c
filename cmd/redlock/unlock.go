package main

import (
	"context"
	"fmt"
)

var unlockHelp = commandHelp{
	name:     "unlock",
	synopsis: "redlock unlock --force [flags] KEY",
	about: `Release the lock KEY on every node, whoever holds it: an administrative
release, for a holder that is gone and a TTL too long to wait for. It refuses
to run without --force, because of what it does to a holder that is still
alive: that holder believes it holds the lock until it next speaks to the
nodes (a renewed hold notices at its next renewal, or at once when it watches
its keys; a hold that is not renewed only at its unlock), and meanwhile
another client may take the lock; a renewal that reaches most nodes before
the release does keeps the hold. Fencing counters are kept, so a resource
that checks fences refuses the old holder's writes. Waiting clients are told
of the release and try again at once.

Only the key KEY is released: the permits of a semaphore (KEY:permit:N), the
readers of a read/write lock (KEY:readers) and the line of a fair lock are
keys of their own. Look first with redlock status KEY.`,
	examples: `redlock status jobs:nightly
redlock unlock --force jobs:nightly`,
	exits: `0    the key was released on every node that answered, and every node answered
1    no node had the key
64   bad usage or configuration, or --force missing
69   a node did not answer: the key may remain there`,
}

func unlockCommand(ctx context.Context, env *environment, args []string) int {
	var connection connectionFlags
	var force bool
	flags := newFlagSet(unlockHelp)
	connection.register(flags, false)
	flags.BoolVar(&force, "force", false, "release the lock whoever holds it (required: see above for what it does to the holder)")
	if status, ok := parseFlags(env, flags, unlockHelp, args); !ok {
		return status
	}
	if flags.NArg() != 1 || flags.Arg(0) == "" {
		return usageError(env, unlockHelp, "expected one KEY, got %d arguments", flags.NArg())
	}
	key := flags.Arg(0)
	if !force {
		return usageError(env, unlockHelp, "refusing to release %q without --force: a holder that is still alive would go on "+
			"believing it holds the lock until it next speaks to the nodes, while another client may take it", key)
	}
	client, status := connection.client(env, unlockHelp, nil)
	if client == nil {
		return status
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	released, err := client.ForceRelease(ctx, key)
	if err != nil {
		fmt.Fprintf(env.stderr, "redlock unlock: %v\n", err)
		fmt.Fprintf(env.stdout, "%q released on %d nodes; some did not answer\n", key, released)
		return exitUnavailable
	}
	if released == 0 {
		fmt.Fprintf(env.stdout, "%q was not held: no node had the key\n", key)
		return exitFailed
	}
	fmt.Fprintf(env.stdout, "%q released on %d nodes\n", key, released)
	return exitOK
}
