package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"

	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
)

// localServer is a Redis server that bench or demo started for itself on a
// loopback port, and stops when done.
type localServer interface {
	// Address returns "127.0.0.1:PORT".
	Address() string
	// Stop makes the server stop answering: a real process is paused
	// (SIGSTOP) and keeps its connections; an embedded one is closed. It
	// returns what happened, for the demo's log.
	Stop() (string, error)
	// Crash ends the server abruptly: SIGKILL for a process, a close for an
	// embedded one.
	Crash() (string, error)
	// Wipe ends the server abruptly and removes its data, as a restart
	// without persistence loses it: Recover brings it back empty. An
	// embedded server cannot (errNoWipe).
	Wipe() (string, error)
	// Recover undoes Stop, Crash or Wipe: the server answers again on the
	// same address, with its data (a process reloads its append-only
	// file) unless it was wiped.
	Recover() (string, error)
	// Close stops the server for good and removes its files.
	Close() error
}

// Kinds of local servers.
const (
	kindProcess  = "redis-server"
	kindEmbedded = "miniredis"
)

// localCluster is the set of servers that bench or demo started.
type localCluster struct {
	// kind is kindProcess or kindEmbedded.
	kind string
	// description says what was started, for the user.
	description string
	servers     []localServer
}

// clusterOptions says what servers to start.
type clusterOptions struct {
	// nodes is the number of servers.
	nodes int
	// embedded starts miniredis servers even when redis-server is on the
	// PATH.
	embedded bool
	// persistent starts redis-server with appendonly yes and appendfsync
	// always, so that a crash and a restart keep every lock.
	persistent bool
}

// startCluster starts the servers: redis-server processes when the binary
// is on the PATH (and options.embedded is not set), otherwise miniredis
// servers in this process. On failure nothing is left running.
func startCluster(ctx context.Context, options clusterOptions) (*localCluster, error) {
	binary, err := exec.LookPath("redis-server")
	cluster := &localCluster{}
	if err != nil || options.embedded {
		cluster.kind = kindEmbedded
		for range options.nodes {
			server, err := startEmbeddedServer()
			if err != nil {
				return nil, errors.Join(err, cluster.close())
			}
			cluster.servers = append(cluster.servers, server)
		}
		reason := "redis-server is not on the PATH"
		if options.embedded {
			reason = "as asked"
		}
		cluster.description = fmt.Sprintf("%d embedded miniredis servers in this process (%s)", options.nodes, reason)
		return cluster, cluster.trust(ctx)
	}

	cluster.kind = kindProcess
	for range options.nodes {
		server, err := startProcessServer(ctx, binary, options.persistent)
		if err != nil {
			return nil, errors.Join(err, cluster.close())
		}
		cluster.servers = append(cluster.servers, server)
	}
	persistence := "without persistence"
	if options.persistent {
		persistence = "with appendonly yes, appendfsync always"
	}
	cluster.description = fmt.Sprintf("%d %s processes (%s), %s", options.nodes, binary, serverVersion(binary), persistence)
	return cluster, cluster.trust(ctx)
}

// trust states the servers new to the quarantine (Client.TrustNodes): they
// were just started, and nothing locked on them before. On failure it
// stops them.
func (c *localCluster) trust(ctx context.Context) error {
	if err := trustednodes.Trust(ctx, c.addresses(), redlock.Options{}); err != nil {
		return errors.Join(fmt.Errorf("state the new servers trusted: %w", err), c.close())
	}
	return nil
}

// addresses returns the servers' addresses.
func (c *localCluster) addresses() []string {
	addresses := make([]string, len(c.servers))
	for i, server := range c.servers {
		addresses[i] = server.Address()
	}
	return addresses
}

// close stops every server.
func (c *localCluster) close() error {
	var errs []error
	for _, server := range c.servers {
		errs = append(errs, server.Close())
	}
	c.servers = nil
	return errors.Join(errs...)
}

// serverVersion returns the version redis-server reports, such as
// "Redis 7.0.15".
func serverVersion(binary string) string {
	output, err := exec.Command(binary, "--version").Output()
	if err != nil {
		return "version unknown"
	}
	for field := range strings.FieldsSeq(string(output)) {
		if version, found := strings.CutPrefix(field, "v="); found {
			return "Redis " + version
		}
	}
	return strings.TrimSpace(string(output))
}

// freePort asks the kernel for a loopback port that is free now.
func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	port := listener.Addr().(*net.TCPAddr).Port
	return port, listener.Close()
}

// ping reports whether a server answers PING at address within timeout.
func ping(address string, timeout time.Duration) bool {
	connection, err := net.DialTimeout("tcp", address, timeout)
	if err != nil {
		return false
	}
	defer connection.Close()
	connection.SetDeadline(time.Now().Add(timeout))
	if _, err := connection.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(connection).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}
