// Command redlock is the command-line tool of lockmux: it runs a command
// under a Redlock lock, shows who holds a lock, finds leaked lock keys,
// checks that Redis nodes can carry Redlock safely, measures lock
// throughput and latency, and demonstrates the whole on servers of its own.
//
// Run "redlock help" for the list of commands and "redlock COMMAND --help"
// for the flags and examples of each. Addresses come from --addrs or the
// REDLOCK_ADDRS environment variable, as a comma-separated list. The exit
// statuses are listed in exit.go and in "redlock help".
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// environment is what a command may use of the outside world. main fills
// it from the process; tests give their own.
type environment struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// getenv reads an environment variable.
	getenv func(name string) string
	// terminal reports whether stderr is a terminal, where progress is
	// drawn on one line that rewrites itself.
	terminal bool
}

// command is one subcommand of redlock.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *environment, args []string) int
}

// commands lists the subcommands in the order the help shows them.
var commands = []command{
	{name: "run", summary: "run a command while holding a lock", run: runCommand},
	{name: "elect", summary: "run a command while this process leads an election", run: electCommand},
	{name: "status", summary: "show who holds a lock on each node", run: statusCommand},
	{name: "scan", summary: "list lock keys per node, and those without a TTL", run: scanCommand},
	{name: "unlock", summary: "release a lock whoever holds it (administrative, --force)", run: unlockCommand},
	{name: "doctor", summary: "check that the nodes can carry Redlock safely", run: doctorCommand},
	{name: "trust-nodes", summary: "state that the nodes are new, for the quarantine (--force)", run: trustCommand},
	{name: "bench", summary: "measure lock latency and throughput", run: benchCommand},
	{name: "demo", summary: "watch workers share a lock while nodes fail", run: demoCommand},
	{name: "version", summary: "print the version of lockmux and of Go that built redlock", run: versionCommand},
}

func main() {
	env := &environment{
		stdin:    os.Stdin,
		stdout:   os.Stdout,
		stderr:   os.Stderr,
		getenv:   os.Getenv,
		terminal: isTerminal(os.Stderr),
	}
	os.Exit(dispatch(context.Background(), env, os.Args[1:]))
}

// dispatch runs the subcommand named by args[0] and returns the exit
// status.
func dispatch(ctx context.Context, env *environment, args []string) int {
	if len(args) == 0 {
		writeUsage(env.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" {
			if c, found := lookup(args[1]); found {
				return c.run(ctx, env, []string{"--help"})
			}
			fmt.Fprintf(env.stderr, "redlock: unknown command %q\n", args[1])
			return exitUsage
		}
		writeUsage(env.stdout)
		return exitOK
	}
	c, found := lookup(name)
	if !found {
		fmt.Fprintf(env.stderr, "redlock: unknown command %q; run 'redlock help' for the list\n", name)
		return exitUsage
	}
	return c.run(ctx, env, args[1:])
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func writeUsage(w io.Writer) {
	var text strings.Builder
	text.WriteString(`redlock runs commands under distributed locks on Redis (Redlock), and checks
and demonstrates the nodes that carry them.

Usage:
  redlock COMMAND [flags] [arguments]

Commands:
`)
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(&text, "  %-*s  %s\n", width, c.name, c.summary)
	}
	text.WriteString(`
Run 'redlock COMMAND --help' for the flags and examples of a command.

Addresses: --addrs or REDLOCK_ADDRS, comma-separated, each "host:port",
"redis://[user:password@]host:port[/db]", "rediss://..." (TLS),
"unix:///path", or for a master that Redis Sentinel serves
"redis-sentinel://host:port/master-name?addr=host:port&addr=..." (its
sentinels; a failover quarantines it), or for a Redis Cluster
"redis-cluster://host:port?addr=host:port&addr=..." (nodes of it; a
failover of any master quarantines it, and the keys of one lock must share
a hash slot). The nodes must be independent masters or deployments. bench
and demo start servers of their own when no addresses are given.

status, doctor and bench print their result as one JSON object with --json
(docs/json.md describes the fields), with the same exit status.

`)
	text.WriteString(exitStatusTable)
	io.WriteString(w, text.String())
}
