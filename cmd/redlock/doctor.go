package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/doctor"
)

// doctorTimeout bounds doctor.
const doctorTimeout = 30 * time.Second

var doctorHelp = commandHelp{
	name:     "doctor",
	synopsis: "redlock doctor [flags]",
	about: `Check that the nodes can carry Redlock safely, and say what to fix. For every
node: it answers; it is a master, not a replica, and without replicas that
could take over; it is not in cluster mode; no other address reaches the same
server (run_id); it persists every write (appendonly yes, appendfsync always);
it never evicts keys (maxmemory-policy noeviction); it has run for longer than
the longest TTL, or persists every write; its epoch marker, for clients with
Options.Quarantine, is older than the longest TTL; its clock is close to this host's
(TIME, corrected for half the round trip); it can notify waiters of releases
(RESP3, and an ACL that lets the user use the release channels);
the user has every right lockmux needs: the commands, the lock keys, their
fencing counters and their release channels. The permissions are probed by
running the commands themselves on a key of the doctor's own, PREFIX followed
by lockmux-doctor: and random digits, which it deletes again; give the prefix
of your lock keys with --key-prefix for a user who may use only some keys. A
missing right is named, with the ACL SETUSER rule that grants it.

Each finding is ok, warn (works, but a crash, memory pressure or a clock step
could break mutual exclusion, or waiters are not woken by releases) or fail
(cannot carry Redlock as configured).
With --json the reports are printed as one JSON object on stdout, for CI
and monitoring (the fields are described in docs/json.md), with the same exit
status. The same checks are available to services as doctor.Run, in the
package github.com/lockmux/lockmux/redlock/doctor.`,
	examples: `redlock doctor --addrs 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379

# In CI: fail on warnings too, for locks held up to five minutes:
redlock doctor --strict --longest-ttl 5m

# A user allowed the keys orders:* only:
redlock doctor --addrs redis://locker:secret@10.0.0.1:6379 --key-prefix orders:

# The checks that did not pass, with jq:
redlock doctor --json | jq '.nodes[].findings[] | select(.severity != "ok")'`,
	exits: `0    no check failed (with --strict: no warning either)
1    a check failed, or the checks were cut short (30 s, or a signal)
64   bad usage or configuration`,
}

func doctorCommand(ctx context.Context, env *environment, args []string) int {
	var connection connectionFlags
	var options doctor.Options
	var strict, asJSON bool
	flags := newFlagSet(doctorHelp)
	connection.register(flags, false)
	flags.DurationVar(&options.LongestTTL, "longest-ttl", redlock.DefaultTTL,
		"the longest a lock stays on a node, extensions included")
	flags.DurationVar(&options.MaxClockOffset, "max-clock-offset", doctor.DefaultMaxClockOffset,
		"the largest clock difference between a node and this host that passes")
	flags.StringVar(&options.KeyPrefix, "key-prefix", "",
		"a prefix of the lock keys, under which the permissions check probes a key of its own")
	flags.BoolVar(&strict, "strict", false, "exit with 1 on warnings too")
	flags.BoolVar(&asJSON, "json", false, "print the reports as one JSON object (see docs/json.md)")
	if status, ok := parseFlags(env, flags, doctorHelp, args); !ok {
		return status
	}
	if flags.NArg() != 0 {
		return usageError(env, doctorHelp, "unexpected argument %q", flags.Arg(0))
	}
	addresses, err := connection.list(env)
	if err == nil && len(addresses) == 0 {
		err = errNoAddresses
	}
	if err != nil {
		return usageError(env, doctorHelp, "%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	// The addresses as given, not those of a Client: doctor also examines
	// what redlock.New refuses, such as two addresses of one server.
	reports, err := doctor.Run(ctx, addresses, connection.options(), options)
	if err != nil && reports == nil { // invalid options: nothing was examined
		fmt.Fprintf(env.stderr, "redlock doctor: %v\n", err)
		return statusOf(err)
	}

	result := newDoctorResult(reports, err)
	if asJSON {
		writeJSON(env.stdout, result)
	} else {
		fmt.Fprint(env.stdout, doctorText(reports, result))
	}
	if err != nil {
		// Cut short by doctorTimeout or a signal: the reports are incomplete.
		fmt.Fprintf(env.stderr, "redlock doctor: %v\n", err)
		return exitFailed
	}
	if result.Failures > 0 || strict && result.Warnings > 0 {
		return exitFailed
	}
	return exitOK
}

// doctorText returns the reports for people: each node's findings, the
// notes and the counts of result.
func doctorText(reports []doctor.NodeReport, result doctorResultJSON) string {
	var out strings.Builder
	for _, report := range reports {
		fmt.Fprintf(&out, "%s", report.Address)
		if report.Version != "" {
			fmt.Fprintf(&out, " (redis %s)", report.Version)
		}
		fmt.Fprintf(&out, ": %s\n", report.Severity())
		for _, finding := range report.Findings {
			fmt.Fprintf(&out, "  %-4s  %-16s  %s\n", finding.Severity, finding.Check, finding.Message)
		}
	}
	for _, note := range result.Notes {
		fmt.Fprintf(&out, "note: %s\n", note)
	}
	fmt.Fprintf(&out, "%s: %d ok, %s, %s\n", plural(len(reports), "node"), result.OK,
		plural(result.Warnings, "warning"), plural(result.Failures, "failure"))
	return out.String()
}
