package main

import (
	"context"
	"fmt"
)

var trustHelp = commandHelp{
	name:     "trust-nodes",
	synopsis: "redlock trust-nodes --force [flags]",
	about: `State that the nodes are new, or kept every key they ever held: servers
started empty for these locks, never used by a lock before. It writes each
node's epoch marker (the key lockmux:epoch) as if it were as old as the node,
so that clients, which quarantine by default, let the nodes vote at once instead of
keeping them out for MaxTTL. It refuses to run without --force, because a
false statement breaks the exclusion: a node that lost the keys of live
holds, trusted, can give the same lock to a second client. The next restart,
failover or flush of a node is quarantined again.`,
	examples: `redlock trust-nodes --force --addrs 127.0.0.1:6379,127.0.0.1:6380,127.0.0.1:6381`,
	exits: `0    every node was stated new
64   bad usage or configuration, or --force missing
69   a node could not be reached`,
}

func trustCommand(ctx context.Context, env *environment, args []string) int {
	var connection connectionFlags
	var force bool
	flags := newFlagSet(trustHelp)
	connection.register(flags, false)
	flags.BoolVar(&force, "force", false, "state that the nodes lost no lock key (required: see above)")
	if status, ok := parseFlags(env, flags, trustHelp, args); !ok {
		return status
	}
	if flags.NArg() != 0 {
		return usageError(env, trustHelp, "unexpected argument %q", flags.Arg(0))
	}
	if !force {
		return usageError(env, trustHelp, "refusing without --force: stating that nodes which lost the keys of live holds are new "+
			"lets a second client take a lock that is held")
	}
	client, status := connection.client(env, trustHelp, nil)
	if client == nil {
		return status
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	if err := client.TrustNodes(ctx); err != nil {
		fmt.Fprintf(env.stderr, "redlock trust-nodes: %v\n", err)
		return exitUnavailable
	}
	fmt.Fprintln(env.stdout, "every node was stated new: its epoch marker is as old as the node")
	return exitOK
}
