package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/inspect"
)

// inspectTimeout bounds status and scan.
const inspectTimeout = 10 * time.Second

var statusHelp = commandHelp{
	name:     "status",
	synopsis: "redlock status [flags] KEY",
	about: `Show, for every node, whether it holds the lock KEY, the first characters of
the holder's token, the remaining TTL and the fencing counter, then whether a
quorum of nodes holds the same token, that is whether somebody holds the
lock. With --semaphore N, show instead each of the N permits of the
semaphore KEY (see redlock run --semaphore): held, by which token, or free.
With --rw, show the read/write lock KEY (see redlock run --read): its writer,
and the live readers on each node. It only reads. With --json it prints the
same as one JSON object on stdout, for scripts and monitoring (the fields are
described in docs/json.md), and exits with the same status.`,
	examples: `redlock status --addrs 127.0.0.1:6379,127.0.0.1:6380,127.0.0.1:6381 jobs:nightly

# In a script: is anybody running the nightly job?
if redlock status jobs:nightly >/dev/null; then echo busy; fi

# How many of the four export permits are held?
redlock status --semaphore 4 exports

# Who reads or writes the catalog?
redlock status --rw catalog

# The state alone (locked, free, split or unknown), with jq:
redlock status --json jobs:nightly | jq -r .state`,
	exits: `0    a quorum of nodes holds the key: it is locked (with --semaphore: every
     permit is held, so a new holder would wait)
1    no quorum holds the key: it is free (or split between holders); with
     --semaphore, a permit is free; with --rw, nobody reads or writes
64   bad usage or configuration
69   too few nodes answered to tell`,
}

func statusCommand(ctx context.Context, env *environment, args []string) int {
	var connection connectionFlags
	var limit int
	var readWrite, asJSON bool
	flags := newFlagSet(statusHelp)
	connection.register(flags, false)
	flags.IntVar(&limit, "semaphore", 0, "show the `N` permits of the semaphore KEY instead of the lock KEY")
	flags.BoolVar(&readWrite, "rw", false, "show the read/write lock KEY: its writer and its readers")
	flags.BoolVar(&asJSON, "json", false, "print the result as one JSON object (see docs/json.md)")
	if status, ok := parseFlags(env, flags, statusHelp, args); !ok {
		return status
	}
	if flags.NArg() != 1 || flags.Arg(0) == "" {
		return usageError(env, statusHelp, "expected one KEY, got %d arguments", flags.NArg())
	}
	key := flags.Arg(0)
	switch {
	case limit < 0 || limit > redlock.MaxSemaphoreLimit:
		return usageError(env, statusHelp, "--semaphore %d is not in [1, %d]", limit, redlock.MaxSemaphoreLimit)
	case limit > 0 && readWrite:
		return usageError(env, statusHelp, "--semaphore and --rw exclude each other")
	}
	inspector, status := connection.inspector(env, statusHelp)
	if inspector == nil {
		return status
	}
	defer inspector.Close()

	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	switch {
	case limit > 0:
		return semaphoreStatus(ctx, env, inspector, key, limit, asJSON)
	case readWrite:
		return readWriteStatus(ctx, env, inspector, key, asJSON)
	}
	return lockStatus(ctx, env, inspector, key, asJSON)
}

// The states that status reports. A state decides the exit status, with
// or without --json.
const (
	stateLocked    = "locked"    // a quorum holds one token
	stateFree      = "free"      // no node holds it
	stateSplit     = "split"     // held, but no token on a quorum
	stateUnknown   = "unknown"   // too few nodes answered to tell
	stateFull      = "full"      // a semaphore: every permit held
	stateAvailable = "available" // a semaphore: a permit is free
	stateWritten   = "written"   // a read/write lock: a writer holds it
	stateRead      = "read"      // a read/write lock: readers hold it
)

// stateStatus is the exit status of a state: 0 when a holder would wait,
// 69 when too few nodes answered to tell, 1 otherwise.
func stateStatus(state string) int {
	switch state {
	case stateLocked, stateFull, stateWritten, stateRead:
		return exitOK
	case stateUnknown:
		return exitUnavailable
	}
	return exitFailed
}

// lockState tells whether lock is locked, free, split or unknown.
func lockState(lock inspect.LockStatus) string {
	switch {
	case lock.Locked():
		return stateLocked
	case lock.Answered < lock.Need:
		return stateUnknown
	case lock.Holders == 0:
		return stateFree
	}
	return stateSplit
}

// lockStatus shows who holds the lock key on each node, and whether a
// quorum does.
func lockStatus(ctx context.Context, env *environment, inspector *inspect.Inspector, key string, asJSON bool) int {
	lock, err := inspector.Status(ctx, key)
	if err != nil {
		fmt.Fprintf(env.stderr, "redlock status: %v\n", err)
		return statusOf(err)
	}
	state := lockState(lock)
	if asJSON {
		writeJSON(env.stdout, newLockStatusJSON(lock))
		return stateStatus(state)
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
	switch state {
	case stateLocked:
		fmt.Fprintf(env.stdout, "%q is locked: token %s… on %d of %d nodes (quorum %d)", key, lock.Holder, lock.Holders, nodes, lock.Need)
		if lock.Metadata != "" {
			fmt.Fprintf(env.stdout, ", metadata %q", lock.Metadata)
		}
		fmt.Fprintln(env.stdout)
	case stateUnknown:
		fmt.Fprintf(env.stdout, "unknown: only %d of %d nodes answered, and a quorum is %d\n", lock.Answered, nodes, lock.Need)
	case stateFree:
		fmt.Fprintf(env.stdout, "%q is free: no node holds it\n", key)
	default:
		fmt.Fprintf(env.stdout, "%q is not locked: the most common token, %s…, is on %d of %d nodes, short of the quorum %d\n",
			key, lock.Holder, lock.Holders, nodes, lock.Need)
	}
	if lock.Waiting > 0 {
		fmt.Fprintf(env.stdout, "%d waiting in line (a fair lock)\n", lock.Waiting)
	}
	printEpochs(env, lock)
	return stateStatus(state)
}

// fenceText shows a fencing counter, or "-" when there is none.
func fenceText(fence int64) string {
	if fence == 0 {
		return "-"
	}
	return fmt.Sprint(fence)
}

// printEpochs shows, when some node has an epoch marker (written by the
// clients' quarantine), how old each node's is, and which nodes have none
// of their server process: a client that quarantines keeps those out of
// the locks for its MaxTTL when it connects.
//
// A marker stated new is dated at the start of the node's clock: older
// than statedNewAge, which no server's uptime reaches.
func printEpochs(env *environment, lock inspect.LockStatus) {
	const statedNewAge = 30 * 365 * 24 * time.Hour
	marked := false
	for _, node := range lock.Nodes {
		marked = marked || node.Err == nil && node.EpochAge >= 0
	}
	if !marked {
		return
	}
	for _, node := range lock.Nodes {
		switch {
		case node.Err != nil:
		case node.EpochAge < 0:
			fmt.Fprintf(env.stdout, "%s: no epoch marker of this server process (restarted, promoted or flushed): "+
				"quarantined for MaxTTL when a client connects\n", node.Address)
		case node.EpochAge > statedNewAge:
			fmt.Fprintf(env.stdout, "%s: epoch marker stated new (trust-nodes)\n", node.Address)
		default:
			fmt.Fprintf(env.stdout, "%s: epoch marker %v old\n", node.Address, node.EpochAge.Round(time.Millisecond))
		}
	}
}
