package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/inspect"
)

// addressesVariable is the environment variable that holds the nodes'
// addresses when --addrs is not given.
const addressesVariable = "REDLOCK_ADDRS"

// errNoAddresses is reported by commands that need nodes and were given
// none.
var errNoAddresses = errors.New("no addresses: give the nodes with --addrs or " + addressesVariable +
	" (comma-separated, such as 127.0.0.1:6379,127.0.0.1:6380,127.0.0.1:6381)")

// connectionFlags are the flags that say how to reach the nodes.
type connectionFlags struct {
	addresses   string
	nodeTimeout time.Duration
	maxTTL      time.Duration
	quarantine  bool
	// lockRounds is set for the commands that run lock rounds, which
	// take --node-timeout.
	lockRounds bool
}

// register adds --addrs to flags, and --node-timeout when the command runs
// lock rounds (run, bench, demo); the commands that only read the nodes
// (status, scan, doctor) wait for them as their packages say, and do not
// take it.
func (c *connectionFlags) register(flags *flag.FlagSet, lockRounds bool) {
	flags.StringVar(&c.addresses, "addrs", "",
		"the nodes' `addresses`, comma-separated (default $"+addressesVariable+")")
	c.lockRounds = lockRounds
	if lockRounds {
		flags.DurationVar(&c.nodeTimeout, "node-timeout", redlock.DefaultNodeTimeout,
			"how long to wait for one node's reply in a lock round")
		flags.DurationVar(&c.maxTTL, "max-ttl", redlock.DefaultTTL,
			"the longest TTL any client of these nodes uses: a node that may have lost keys votes again that long after")
		flags.BoolVar(&c.quarantine, "quarantine", true,
			"keep a node that may have lost keys (a restart, a promotion, a flush) out of the votes for --max-ttl")
	}
}

// list returns the addresses from --addrs, or else from REDLOCK_ADDRS, or
// nil when neither is set. It refuses an address that does not parse.
func (c *connectionFlags) list(env *environment) ([]string, error) {
	text := c.addresses
	if text == "" {
		text = env.getenv(addressesVariable)
	}
	var addresses []string
	for field := range strings.SplitSeq(text, ",") {
		address := strings.TrimSpace(field)
		if address == "" {
			continue
		}
		if _, err := conn.ParseAddress(address); err != nil {
			return nil, fmt.Errorf("address %q: %w", address, err)
		}
		addresses = append(addresses, address)
	}
	return addresses, nil
}

// distinct refuses two addresses of the same host and port (or socket),
// which would count twice in a quorum. Other names of one server are found
// by the client, from the servers' run_id.
func distinct(addresses []string) error {
	seen := make(map[string]string)
	for _, address := range addresses {
		parsed, err := conn.ParseAddress(address)
		if err != nil {
			return fmt.Errorf("address %q: %w", address, err)
		}
		endpoint := parsed.Network + " " + parsed.Addr
		if first, found := seen[endpoint]; found {
			return fmt.Errorf("addresses %q and %q reach the same server %s: it would count twice in a quorum", first, address, parsed.Addr)
		}
		seen[endpoint] = address
	}
	return nil
}

// options returns the client options the flags ask for.
func (c *connectionFlags) options() redlock.Options {
	options := redlock.Options{NodeTimeout: c.nodeTimeout, MaxTTL: c.maxTTL}
	if !c.quarantine && c.lockRounds {
		options.Quarantine = redlock.QuarantineOff
	}
	return options
}

// checkTTL refuses a lock TTL that the quarantine does not cover.
func (c *connectionFlags) checkTTL(ttl time.Duration) error {
	if c.quarantine && ttl > c.maxTTL {
		return fmt.Errorf("--ttl %v exceeds --max-ttl %v: give --max-ttl, the longest TTL of any client of these nodes", ttl, c.maxTTL)
	}
	return nil
}

// nodes returns the addresses named by the flags or the environment, once
// checked with the other connection flags. On a usage error it reports it
// and returns nil with the exit status.
func (c *connectionFlags) nodes(env *environment, help commandHelp) ([]string, int) {
	addresses, err := c.list(env)
	if err == nil {
		err = distinct(addresses)
	}
	if err != nil {
		return nil, usageError(env, help, "%v", err)
	}
	if len(addresses) == 0 {
		return nil, usageError(env, help, "%v", errNoAddresses)
	}
	if c.lockRounds && c.nodeTimeout <= 0 {
		return nil, usageError(env, help, "--node-timeout must be positive")
	}
	if c.lockRounds && c.maxTTL <= 0 {
		return nil, usageError(env, help, "--max-ttl must be positive")
	}
	return addresses, exitOK
}

// client connects to the nodes named by the flags or the environment,
// with observer (nil for none). On failure it reports the error and
// returns the exit status.
func (c *connectionFlags) client(env *environment, help commandHelp, observer redlock.Observer) (*redlock.Client, int) {
	addresses, status := c.nodes(env, help)
	if addresses == nil {
		return nil, status
	}
	options := c.options()
	options.Observer = observer
	client, err := redlock.New(addresses, options)
	if err != nil {
		fmt.Fprintf(env.stderr, "redlock %s: %v\n", help.name, err)
		return nil, statusOf(err)
	}
	return client, exitOK
}

// inspector connects to the nodes named by the flags or the environment to
// read their lock keys. On failure it reports the error and returns the
// exit status.
func (c *connectionFlags) inspector(env *environment, help commandHelp) (*inspect.Inspector, int) {
	addresses, status := c.nodes(env, help)
	if addresses == nil {
		return nil, status
	}
	inspector, err := inspect.New(addresses, c.options())
	if err != nil {
		fmt.Fprintf(env.stderr, "redlock %s: %v\n", help.name, err)
		return nil, statusOf(err)
	}
	return inspector, exitOK
}
