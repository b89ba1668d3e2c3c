package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/lockmux/lockmux/redlock"
)

var electHelp = commandHelp{
	name:     "elect",
	synopsis: "redlock elect [flags] NAME -- COMMAND [ARGS...]",
	about: `Campaign in the election NAME and run COMMAND while this process leads.
redlock waits as long as it takes to lead, renews the leadership in the
background (at about a third of --ttl) while the command runs, resigns when
the command exits, and exits with the command's status. While too few nodes
answer for a quorum, it campaigns on.

If the leadership is lost (too many nodes stop answering, or it reaches
--max-term), the command gets SIGTERM, then SIGKILL after --grace, and
redlock campaigns again, to run the command anew when it leads. Signals are
passed on to the command as by 'redlock run'. docs/election.md is the guide.

The command finds in its environment:
  REDLOCK_KEY    NAME, the key of the election's lock on the nodes
  REDLOCK_TOKEN  the value this process campaigned with (--value)
  REDLOCK_FENCE  the leadership's term: a number that grows with every
                 leader of NAME; give it to the resource with each write so
                 that it can refuse the writes of an older leader

Flags go before NAME.`,
	examples: `# Run the scheduler on one machine at a time, and on another when it fails:
export REDLOCK_ADDRS=10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
redlock elect scheduler -- ./scheduler --serve

# Name the leader, as 'redlock status scheduler' and Election.Leader show it:
redlock elect --value "$(hostname) scheduler" scheduler -- ./scheduler`,
	exits: `the command's own status once it exits while leading, or 128+N if signal N
killed it
64   bad usage or configuration
126  the command could not be started; 127 it was not found
130  interrupted while campaigning (143 for SIGTERM)`,
}

// campaignRetry is how long elect waits before it campaigns again when
// too few nodes answered for a quorum.
const campaignRetry = 250 * time.Millisecond

func electCommand(ctx context.Context, env *environment, args []string) int {
	f := runFlags{command: electHelp.name, fencing: true}
	var value string
	flags := newFlagSet(electHelp)
	f.connection.register(flags, true)
	flags.DurationVar(&f.ttl, "ttl", redlock.DefaultTTL, "how long the leader's key lives on the nodes unless renewed")
	flags.DurationVar(&f.grace, "grace", 5*time.Second, "time between SIGTERM and SIGKILL when the leadership is lost")
	flags.DurationVar(&f.maxHold, "max-term", redlock.DefaultMaxHold,
		"the longest one leadership lasts; then the command is stopped and redlock campaigns again")
	flags.StringVar(&value, "value", defaultValue(), "the value the leader is known by: printable ASCII, at most 256 bytes")
	flags.BoolVar(&f.verbose, "verbose", false, "report each leadership and its end on stderr")
	if status, ok := parseFlags(env, flags, electHelp, args); !ok {
		return status
	}
	name, commandLine, err := splitRunArguments(flags.Args())
	if err != nil {
		return usageError(env, electHelp, "%v", err)
	}
	switch {
	case f.ttl < redlock.MinTTL:
		return usageError(env, electHelp, "--ttl %v is shorter than %v", f.ttl, redlock.MinTTL)
	case f.grace < 0:
		return usageError(env, electHelp, "--grace must not be negative")
	case f.maxHold < f.ttl:
		return usageError(env, electHelp, "--max-term %v is shorter than --ttl %v", f.maxHold, f.ttl)
	}

	// Catch the signals before anything else, so that none is lost between
	// a campaign and the start of the command.
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, forwardedSignals...)
	defer signal.Stop(signals)

	losses := &lossRecorder{}
	client, status := f.connection.client(env, electHelp, losses)
	if client == nil {
		return status
	}
	defer client.Close()

	election := client.NewElection(name, redlock.ElectionOptions{TTL: f.ttl, MaxTerm: f.maxHold})
	campaign := func(ctx context.Context) (hold, error) {
		retry := time.NewTimer(0)
		defer retry.Stop()
		reported := false
		for {
			l, err := election.Campaign(ctx, value)
			switch {
			case err == nil:
				return leadershipHold{Leadership: l, name: name}, nil
			case !errors.Is(err, redlock.ErrQuorumUnreachable) || ctx.Err() != nil:
				return nil, err
			case !reported:
				reported = true
				fmt.Fprintf(env.stderr, "redlock elect: %q: too few nodes answered for a quorum; campaigning on: %v\n", name, err)
			}
			retry.Reset(campaignRetry)
			select {
			case <-retry.C:
			case <-ctx.Done():
				return nil, fmt.Errorf("redlock elect: %q: %w", name, ctx.Err())
			}
		}
	}
	for {
		h, status, ok := acquire(ctx, env, f.command, name, campaign, campaign, -1, signals)
		if !ok {
			return status
		}
		if f.verbose {
			fmt.Fprintf(env.stderr, "redlock elect: leading %q in term %d as %q\n", name, h.Fence(), value)
		}
		status = superviseCommand(env, h, f, commandLine, signals, losses)
		resignContext, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		err := h.Release(resignContext)
		cancel()
		switch {
		case err != nil && status != exitLost:
			fmt.Fprintf(env.stderr, "redlock elect: the resignation from %q was not confirmed (the leadership expires by itself within %v): %v\n", name, f.ttl, err)
		case err == nil && f.verbose:
			fmt.Fprintf(env.stderr, "redlock elect: resigned from %q\n", name)
		}
		if status != exitLost {
			return status
		}
		fmt.Fprintf(env.stderr, "redlock elect: campaigning again in %q\n", name)
	}
}

// defaultValue is the value of elect without --value: the host's name and
// the process's id.
func defaultValue() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s pid %d", host, os.Getpid())
}

// leadershipHold is a leadership, as run's supervision holds it.
type leadershipHold struct {
	*redlock.Leadership
	name string
}

// Key returns the election's name.
func (h leadershipHold) Key() string { return h.name }

// Token returns the value the leader campaigned with.
func (h leadershipHold) Token() string { return h.Value() }

// Fence returns the leadership's term.
func (h leadershipHold) Fence() int64 { return h.Term() }

// Release resigns.
func (h leadershipHold) Release(ctx context.Context) error { return h.Resign(ctx) }
