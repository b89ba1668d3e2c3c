package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
)

// binary is the redlock executable that TestMain builds, for the tests of
// run that need a real process.
var binary string

func TestMain(m *testing.M) {
	directory, err := os.MkdirTemp("", "redlock-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(directory, "redlock")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build redlock:", err)
		os.RemoveAll(directory)
		os.Exit(1)
	}
	status := m.Run()
	os.RemoveAll(directory)
	os.Exit(status)
}

// invocation is the result of one command called in the test process.
type invocation struct {
	status         int
	stdout, stderr string
}

// invoke runs redlock with args in the test process, with variables as
// its whole environment.
func invoke(t *testing.T, variables map[string]string, args ...string) invocation {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := &environment{
		stdin:  strings.NewReader(""),
		stdout: &stdout,
		stderr: &stderr,
		getenv: func(name string) string { return variables[name] },
	}
	status := dispatch(context.Background(), env, args)
	return invocation{status: status, stdout: stdout.String(), stderr: stderr.String()}
}

// startNodes starts n servers, states them new to the quarantine (as the
// demo does with its own), and returns them with their addresses joined
// by commas. startUntrustedNodes leaves them as a restart would.
func startNodes(t *testing.T, n int, options redistest.Options) ([]*redistest.Server, string) {
	t.Helper()
	servers, addresses := startUntrustedNodes(t, n, options)
	require.NoError(t, trustednodes.Trust(context.Background(), strings.Split(addresses, ","), redlock.Options{Password: options.Password}))
	return servers, addresses
}

func startUntrustedNodes(t *testing.T, n int, options redistest.Options) ([]*redistest.Server, string) {
	t.Helper()
	servers := redistest.StartN(t, n, options)
	addresses := make([]string, n)
	for i, server := range servers {
		addresses[i] = server.Addr()
	}
	return servers, strings.Join(addresses, ",")
}

func TestHelpOfEveryCommand(t *testing.T) {
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
				result := invoke(t, nil, args...)
				require.Equal(t, exitOK, result.status, result.stderr)
				assert.Contains(t, result.stdout, "Usage: redlock "+c.name)
				assert.Contains(t, result.stdout, "Examples:\n  ")
				assert.Contains(t, result.stdout, "Exit statuses:")
				if c.name != "version" { // the one command that reaches no node
					assert.Contains(t, result.stdout, "--addrs ADDRESSES")
				}
				assert.Empty(t, result.stderr)
			}
		})
	}
	result := invoke(t, nil, "help")
	assert.Equal(t, exitOK, result.status)
	for _, c := range commands {
		assert.Contains(t, result.stdout, "  "+c.name+" ")
	}
	assert.Contains(t, result.stdout, "Exit statuses:")
}

// The commands that print JSON say so in their help, and the list of
// commands names version.
func TestHelpListsTheJSONFlagsAndVersion(t *testing.T) {
	for _, name := range []string{"status", "doctor", "bench"} {
		result := invoke(t, nil, name, "--help")
		assert.Regexp(t, `\n  --json\n      print the \w+ as one JSON object`, result.stdout, name)
	}
	result := invoke(t, nil, "help")
	assert.Regexp(t, `\n  version +print the version of lockmux`, result.stdout)
	assert.Contains(t, result.stdout, "status, doctor and bench print their result as one JSON object with --json")
}

func TestUsageErrors(t *testing.T) {
	addresses := map[string]string{addressesVariable: "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}
	tests := []struct {
		name      string
		variables map[string]string
		args      []string
		message   string
	}{
		{name: "no command", args: nil, message: "Commands:"},
		{name: "unknown command", args: []string{"lock"}, message: `unknown command "lock"`},
		{name: "unknown flag", variables: addresses, args: []string{"status", "--nope", "k"}, message: "flag provided but not defined: -nope"},
		{name: "run without a command", variables: addresses, args: []string{"run", "k"}, message: "missing COMMAND after KEY"},
		{name: "run without anything", variables: addresses, args: []string{"run"}, message: "missing KEY and COMMAND"},
		{name: "run with a flag after the key", variables: addresses, args: []string{"run", "k", "--ttl", "1s", "--", "true"},
			message: "flags go before KEY"},
		{name: "run with a TTL too short", variables: addresses, args: []string{"run", "--ttl", "1ms", "k", "--", "true"}, message: "shorter than"},
		{name: "run without addresses", args: []string{"run", "k", "--", "true"}, message: "no addresses: give the nodes with --addrs or REDLOCK_ADDRS"},
		// The commands that only read the nodes do not take the node timeout
		// of lock rounds, which they would not use.
		{name: "status with a node timeout", variables: addresses, args: []string{"status", "--node-timeout", "1s", "k"},
			message: "flag provided but not defined: -node-timeout"},
		{name: "scan with a node timeout", variables: addresses, args: []string{"scan", "--node-timeout", "1s"},
			message: "flag provided but not defined: -node-timeout"},
		{name: "run with a node timeout of zero", variables: addresses, args: []string{"run", "--node-timeout", "0s", "k", "--", "true"},
			message: "--node-timeout must be positive"},
		{name: "run with a negative semaphore", variables: addresses, args: []string{"run", "--semaphore", "-1", "k", "--", "true"},
			message: "--semaphore -1 is not in [1, 1024]"},
		{name: "run to read and write", variables: addresses, args: []string{"run", "--read", "--write", "k", "--", "true"},
			message: "--read, --write and --semaphore exclude each other"},
		{name: "run a reader with a fence", variables: addresses, args: []string{"run", "--read", "--fencing", "k", "--", "true"},
			message: "readers do not exclude each other"},
		{name: "run fair and read", variables: addresses, args: []string{"run", "--fair", "--read", "k", "--", "true"},
			message: "--fair is for a lock"},
		{name: "status without a key", variables: addresses, args: []string{"status"}, message: "expected one KEY"},
		{name: "scan with an argument", variables: addresses, args: []string{"scan", "k"}, message: `unexpected argument "k"`},
		{name: "doctor without addresses", args: []string{"doctor"}, message: "no addresses"},
		{name: "bench with a bad mode", args: []string{"bench", "--mode", "fast"}, message: "--mode must be serial or concurrent"},
		{name: "bench serial with workers", args: []string{"bench", "--mode", "serial", "--workers", "4"}, message: "runs one worker"},
		{name: "bench negative holds", args: []string{"bench", "--holds", "-1"}, message: "--holds must not be negative"},
		{name: "bench holds with workers", args: []string{"bench", "--holds", "10", "--workers", "4"}, message: "--holds takes no --mode"},
		{name: "demo without workers", args: []string{"demo", "--workers", "0"}, message: "at least 1"},
		{name: "the same address twice", args: []string{"status", "--addrs", "127.0.0.1:7000,redis://127.0.0.1:7000", "k"},
			message: "reach the same server 127.0.0.1:7000"},
		{name: "a bad address", args: []string{"status", "--addrs", "redis://[::1", "k"}, message: "address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result := invoke(t, tt.variables, tt.args...)
			assert.Equal(t, exitUsage, result.status)
			assert.Contains(t, result.stderr, tt.message)
			assert.Empty(t, result.stdout)
		})
	}
}

func TestAddressesComeFromTheFlagOrTheEnvironment(t *testing.T) {
	env := &environment{getenv: func(string) string { return " 127.0.0.1:1, 127.0.0.1:2 ,," }}
	flags := connectionFlags{}
	addresses, err := flags.list(env)
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.1:1", "127.0.0.1:2"}, addresses)

	flags.addresses = "127.0.0.1:3"
	addresses, err = flags.list(env)
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.1:3"}, addresses, "--addrs wins over REDLOCK_ADDRS")
}
