package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

var scanHelp = commandHelp{
	name:     "scan",
	synopsis: "redlock scan [flags]",
	about: `List, for every node, the keys that match --match with their remaining TTL,
and point out those without a TTL. A lock key always has a TTL, so a key
without one that matches the lock pattern is a leak: written by another tool
or by hand, it blocks the lock on that node forever. Fencing counters
(KEY:lockmux-fence) have no TTL by design and are not leaks.

scan walks the keyspace with SCAN, never KEYS, so it does not block the nodes.
Use a --match that covers only your lock keys on nodes that hold other data.`,
	examples: `redlock scan --addrs 127.0.0.1:6379,127.0.0.1:6380,127.0.0.1:6381 --match 'locks:*'

# Only the leaks:
redlock scan --match 'jobs:*' --limit 0`,
	exits: `0    no key without a TTL
1    keys without a TTL were found
64   bad usage or configuration
69   a node could not be scanned`,
}

func scanCommand(ctx context.Context, env *environment, args []string) int {
	var connection connectionFlags
	var match string
	var limit int
	flags := newFlagSet(scanHelp)
	connection.register(flags, false)
	flags.StringVar(&match, "match", "*", "the glob-style `pattern` of the lock keys")
	flags.IntVar(&limit, "limit", 20, "how many keys with a TTL to list per node; keys without one are always listed")
	if status, ok := parseFlags(env, flags, scanHelp, args); !ok {
		return status
	}
	if flags.NArg() != 0 {
		return usageError(env, scanHelp, "unexpected argument %q", flags.Arg(0))
	}
	if limit < 0 {
		return usageError(env, scanHelp, "--limit must not be negative")
	}
	inspector, status := connection.inspector(env, scanHelp)
	if inspector == nil {
		return status
	}
	defer inspector.Close()

	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	nodes, err := inspector.Scan(ctx, match)
	if err != nil {
		fmt.Fprintf(env.stderr, "redlock scan: %v\n", err)
		return statusOf(err)
	}

	var out strings.Builder
	leaks, failed := 0, 0
	for _, node := range nodes {
		nodeLeaks := node.Leaks()
		leaks += len(nodeLeaks)
		fmt.Fprintf(&out, "%s: %s matching %q, %d without a TTL\n", node.Address, plural(len(node.Keys), "key"), match, len(nodeLeaks))
		listed := 0
		for _, key := range node.Keys {
			switch {
			case key.FenceCounter:
				if listed < limit {
					fmt.Fprintf(&out, "  %-40s fencing counter (no TTL by design)\n", key.Key)
					listed++
				}
			case key.Persistent:
				fmt.Fprintf(&out, "  %-40s NO TTL: a leak; check who wrote it, then DEL it or give it a TTL\n", key.Key)
			case listed < limit:
				fmt.Fprintf(&out, "  %-40s ttl %v\n", key.Key, key.TTL.Round(time.Millisecond))
				listed++
			}
		}
		if hidden := len(node.Keys) - len(nodeLeaks) - listed; hidden > 0 {
			fmt.Fprintf(&out, "  … and %d more with a TTL (--limit)\n", hidden)
		}
		if node.Err != nil {
			failed++
			fmt.Fprintf(&out, "  error: %v\n", node.Err)
		}
	}
	switch {
	case failed > 0:
		fmt.Fprintf(&out, "%d of %s could not be scanned completely\n", failed, plural(len(nodes), "node"))
	case leaks > 0:
		fmt.Fprintf(&out, "%s without a TTL\n", plural(leaks, "key"))
	default:
		out.WriteString("no key without a TTL\n")
	}
	fmt.Fprint(env.stdout, out.String())
	switch {
	case failed > 0:
		return exitUnavailable
	case leaks > 0:
		return exitFailed
	}
	return exitOK
}

// plural returns "1 key" or "2 keys".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
