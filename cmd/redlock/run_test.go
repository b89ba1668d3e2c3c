package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
)

// process is a redlock binary started by a test.
type process struct {
	command        *exec.Cmd
	stdout, stderr bytes.Buffer
	exited         chan struct{}
	status         int
}

// startBinary starts the redlock binary with args, REDLOCK_ADDRS set to
// addresses and REDLOCK_BIN to the binary's path, plus variables. It is
// killed when the test ends.
func startBinary(t *testing.T, addresses string, variables []string, args ...string) *process {
	t.Helper()
	p := &process{command: exec.CommandContext(t.Context(), binary, args...), exited: make(chan struct{})}
	p.command.Env = append(os.Environ(), addressesVariable+"="+addresses, "REDLOCK_BIN="+binary)
	p.command.Env = append(p.command.Env, variables...)
	p.command.Stdout, p.command.Stderr = &p.stdout, &p.stderr
	require.NoError(t, p.command.Start())
	go func() {
		err := p.command.Wait()
		p.status = p.command.ProcessState.ExitCode()
		if status, ok := p.command.ProcessState.Sys().(syscall.WaitStatus); ok && status.Signaled() {
			p.status = 128 + int(status.Signal())
		}
		var exitError *exec.ExitError
		if err != nil && !errors.As(err, &exitError) {
			p.status = -1
		}
		close(p.exited)
	}()
	return p
}

// wait waits for the process to exit and returns its status.
func (p *process) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.status
	case <-time.After(timeout):
		p.command.Process.Kill()
		<-p.exited
		require.FailNow(t, "redlock did not exit", "within %v; stderr: %s", timeout, p.stderr.String())
		return -1
	}
}

// runBinary runs the binary to its end and returns it.
func runBinary(t *testing.T, addresses string, variables []string, args ...string) *process {
	t.Helper()
	p := startBinary(t, addresses, variables, args...)
	p.wait(t, time.Minute)
	return p
}

// readFile returns a file's content, or "" when it does not exist.
func readFile(path string) string {
	content, _ := os.ReadFile(path)
	return string(content)
}

func TestRunHoldsTheLockOnlyWhileTheCommandRuns(t *testing.T) {
	_, addresses := startNodes(t, 5, redistest.Options{})
	directory := t.TempDir()
	script := `"$REDLOCK_BIN" status "$REDLOCK_KEY" > "$DIR/status"; echo "$REDLOCK_TOKEN" > "$DIR/token"; ` +
		`echo "$REDLOCK_FENCE" > "$DIR/fence"; echo "$REDLOCK_KEY" > "$DIR/key"`
	p := runBinary(t, addresses, []string{"DIR=" + directory, "REDLOCK_TOKEN=inherited"}, "run", "--fencing", "jobs:nightly", "--", "sh", "-c", script)
	require.Equal(t, exitOK, p.status, p.stderr.String())

	token := strings.TrimSpace(readFile(filepath.Join(directory, "token")))
	require.Len(t, token, 40, "a generated token replaces the inherited one")
	assert.Equal(t, "jobs:nightly\n", readFile(filepath.Join(directory, "key")))
	assert.Contains(t, readFile(filepath.Join(directory, "status")),
		`"jobs:nightly" is locked: token `+token[:8]+`… on 5 of 5 nodes`, "the lock is held while the command runs")
	fence, err := strconv.ParseInt(strings.TrimSpace(readFile(filepath.Join(directory, "fence"))), 10, 64)
	require.NoError(t, err)
	if fence == 0 {
		t.Log("MutexOptions.Fencing is not available: REDLOCK_FENCE is 0")
	} else {
		assert.Positive(t, fence)
	}

	after := invoke(t, map[string]string{addressesVariable: addresses}, "status", "jobs:nightly")
	assert.Equal(t, exitFailed, after.status)
	assert.Contains(t, after.stdout, "is free: no node holds it", "the lock is released when the command exits")
}

func TestRunExitStatuses(t *testing.T) {
	_, addresses := startNodes(t, 3, redistest.Options{})
	holder, err := redlock.New(strings.Split(addresses, ","), redlock.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { holder.Close() })
	held := holder.NewMutex("held", redlock.MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, held.Lock(context.Background()))
	down := redistest.ClosedAddress(t) + "," + redistest.ClosedAddress(t) + "," + redistest.ClosedAddress(t)

	tests := []struct {
		name      string
		addresses string
		args      []string
		status    int
		message   string
	}{
		{name: "the command's own status", args: []string{"run", "k", "--", "sh", "-c", "exit 7"}, status: 7},
		{name: "success", args: []string{"run", "k", "--", "true"}, status: exitOK},
		{name: "the command killed by a signal", args: []string{"run", "k", "--", "sh", "-c", "kill -KILL $$"}, status: 128 + 9},
		{name: "not acquired in time", args: []string{"run", "--wait", "300ms", "held", "--", "true"}, status: exitNotAcquired,
			message: `"held" not acquired within --wait 300ms`},
		{name: "not acquired at once", args: []string{"run", "--wait", "0", "held", "--", "true"}, status: exitNotAcquired,
			message: "held by another"},
		{name: "quorum unreachable", addresses: down, args: []string{"run", "k", "--", "true"}, status: exitUnavailable,
			message: "connection refused"},
		{name: "bad usage", args: []string{"run", "k"}, status: exitUsage, message: "missing COMMAND"},
		{name: "command not found", args: []string{"run", "k", "--", "redlock-no-such-command"}, status: exitNotFound,
			message: "executable file not found"},
		{name: "command not executable", args: []string{"run", "k", "--", "/dev/null"}, status: exitCannotRun,
			message: "permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := addresses
			if tt.addresses != "" {
				nodes = tt.addresses
			}
			p := runBinary(t, nodes, nil, tt.args...)
			assert.Equal(t, tt.status, p.status, p.stderr.String())
			assert.Contains(t, p.stderr.String(), tt.message)
		})
	}
}

// connectedClients returns the number of clients connected to a server.
func connectedClients(t *testing.T, server *redistest.Server) int {
	info := server.Do(t, "INFO", "clients")
	for line := range strings.Lines(info) {
		if value, found := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); found {
			count, err := strconv.Atoi(value)
			require.NoError(t, err)
			return count
		}
	}
	require.FailNow(t, "no connected_clients in INFO", info)
	return 0
}

func TestRunSignals(t *testing.T) {
	redistest.RequireReal(t) // counts connections with INFO clients
	servers, addresses := startNodes(t, 3, redistest.Options{})

	t.Run("passed on to the command", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "marker")
		p := startBinary(t, addresses, []string{"MARKER=" + marker}, "run", "k", "--",
			"sh", "-c", `trap 'echo TERM >> "$MARKER"; exit 5' TERM; echo started > "$MARKER"; while :; do sleep 0.02; done`)
		require.Eventually(t, func() bool { return strings.HasPrefix(readFile(marker), "started") }, 10*time.Second, 10*time.Millisecond)
		require.NoError(t, p.command.Process.Signal(syscall.SIGTERM))
		assert.Equal(t, 5, p.wait(t, 10*time.Second), "the command's own status: %s", p.stderr.String())
		assert.Equal(t, "started\nTERM\n", readFile(marker))
	})

	t.Run("while waiting for the lock", func(t *testing.T) {
		holder, err := redlock.New(strings.Split(addresses, ","), redlock.Options{})
		require.NoError(t, err)
		defer holder.Close()
		held := holder.NewMutex("busy", redlock.MutexOptions{TTL: 10 * time.Second})
		require.NoError(t, held.Lock(context.Background()))
		before := connectedClients(t, servers[0])
		p := startBinary(t, addresses, nil, "run", "--wait", "1m", "busy", "--", "true")
		// Once redlock is connected, its signal handler is in place.
		require.Eventually(t, func() bool { return connectedClients(t, servers[0]) > before }, 10*time.Second, 10*time.Millisecond)
		require.NoError(t, p.command.Process.Signal(syscall.SIGTERM))
		assert.Equal(t, 128+int(syscall.SIGTERM), p.wait(t, 10*time.Second))
		assert.Contains(t, p.stderr.String(), `interrupted by terminated while waiting for "busy"`)
	})
}

// renewalAvailable reports whether the library renews AutoExtend holds: a
// hold with a short TTL is still valid after twice its TTL.
func renewalAvailable(t *testing.T, addresses string) bool {
	client, err := redlock.New(strings.Split(addresses, ","), redlock.Options{})
	require.NoError(t, err)
	defer client.Close()
	const ttl = 300 * time.Millisecond
	m := client.NewMutex("renewal-probe", redlock.MutexOptions{TTL: ttl, AutoExtend: true})
	require.NoError(t, m.Lock(context.Background()))
	defer m.Unlock(context.Background())
	select {
	case <-m.Done():
		return false
	case <-time.After(2 * ttl):
	}
	return time.Now().Before(m.Until())
}

func TestRunStopsTheCommandWhenTheLockIsLost(t *testing.T) {
	redistest.RequireReal(t) // pauses servers
	servers, addresses := startNodes(t, 5, redistest.Options{})
	if !renewalAvailable(t, addresses) {
		t.Skip("MutexOptions.AutoExtend is not available in this build: a hold is not renewed, so a loss cannot be told from an expiry")
	}
	tests := []struct {
		name    string
		script  string
		marker  string
		message string
	}{
		{name: "SIGTERM", script: `trap 'echo TERM >> "$MARKER"; exit 0' TERM; echo started > "$MARKER"; while :; do sleep 0.02; done`,
			marker: "started\nTERM\n", message: "sending SIGTERM"},
		{name: "SIGKILL after the grace period", script: `trap '' TERM; echo started > "$MARKER"; while :; do sleep 0.02; done`,
			marker: "started\n", message: "sending SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "marker")
			p := startBinary(t, addresses, []string{"MARKER=" + marker},
				"run", "--ttl", "1s", "--grace", "500ms", "lost:"+tt.name, "--", "sh", "-c", tt.script)
			require.Eventually(t, func() bool { return strings.HasPrefix(readFile(marker), "started") }, 10*time.Second, 10*time.Millisecond)
			stopped := time.Now()
			for _, server := range servers[:3] {
				server.Stop()
			}
			status := p.wait(t, 20*time.Second)
			t.Logf("redlock exited %v after 3 of 5 nodes stopped (TTL 1s, grace 500ms)", time.Since(stopped).Round(time.Millisecond))
			for _, server := range servers[:3] {
				server.Cont()
			}
			assert.Equal(t, exitLost, status, p.stderr.String())
			assert.Equal(t, tt.marker, readFile(marker))
			assert.Contains(t, p.stderr.String(), `lost the lock "lost:`+tt.name+`" while the command ran`)
			assert.Contains(t, p.stderr.String(), tt.message)
		})
	}
}

func TestRunProcessesNeverOverlap(t *testing.T) {
	_, addresses := startNodes(t, 5, redistest.Options{})
	journal := filepath.Join(t.TempDir(), "journal")
	const processes = 6
	script := `echo "start $$" >> "$JOURNAL"; sleep 0.05; echo "end $$" >> "$JOURNAL"`
	started := make([]*process, processes)
	for i := range started {
		started[i] = startBinary(t, addresses, []string{"JOURNAL=" + journal}, "run", "--wait", "2m", "shared", "--", "sh", "-c", script)
	}
	for _, p := range started {
		assert.Equal(t, exitOK, p.wait(t, 3*time.Minute), p.stderr.String())
	}

	lines := strings.Split(strings.TrimSpace(readFile(journal)), "\n")
	require.Len(t, lines, 2*processes, "every process ran its command once")
	seen := make(map[string]bool)
	for i := 0; i < len(lines); i += 2 {
		start, end := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		require.Len(t, start, 2)
		require.Len(t, end, 2)
		assert.Equal(t, "start", start[0], "line %d: %v", i, lines)
		assert.Equal(t, []string{"end", start[1]}, end, "the critical section of %s was interleaved: %v", start[1], lines)
		assert.False(t, seen[start[1]], "%s ran twice", start[1])
		seen[start[1]] = true
	}
}

// With --semaphore 2, no more than two commands run at once, each under
// the key of the permit it holds.
func TestRunSemaphoreRunsAtMostNCommandsAtOnce(t *testing.T) {
	_, addresses := startNodes(t, 3, redistest.Options{})
	journal := filepath.Join(t.TempDir(), "journal")
	const processes, limit = 6, 2
	script := `echo "start $REDLOCK_KEY" >> "$JOURNAL"; sleep 0.05; echo "end $REDLOCK_KEY" >> "$JOURNAL"`
	started := make([]*process, processes)
	for i := range started {
		started[i] = startBinary(t, addresses, []string{"JOURNAL=" + journal},
			"run", "--wait", "2m", "--semaphore", strconv.Itoa(limit), "exports", "--", "sh", "-c", script)
	}
	for _, p := range started {
		assert.Equal(t, exitOK, p.wait(t, 3*time.Minute), p.stderr.String())
	}

	lines := strings.Split(strings.TrimSpace(readFile(journal)), "\n")
	require.Len(t, lines, 2*processes, "every process ran its command once")
	running := map[string]bool{}
	most := 0
	for _, line := range lines {
		fields := strings.Fields(line)
		require.Len(t, fields, 2, line)
		require.Contains(t, []string{"exports:permit:0", "exports:permit:1"}, fields[1], "REDLOCK_KEY is the permit's key")
		if fields[0] == "start" {
			assert.False(t, running[fields[1]], "two commands under %s at once: %v", fields[1], lines)
			running[fields[1]] = true
		} else {
			delete(running, fields[1])
		}
		most = max(most, len(running))
	}
	assert.LessOrEqual(t, most, limit)
}

func TestSplitRunArguments(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		key     string
		command []string
		problem string
	}{
		{name: "with a separator", args: []string{"k", "--", "ls", "-l"}, key: "k", command: []string{"ls", "-l"}},
		{name: "without a separator", args: []string{"k", "ls", "-l"}, key: "k", command: []string{"ls", "-l"}},
		{name: "a command that looks like a flag", args: []string{"k", "--", "-weird"}, key: "k", command: []string{"-weird"}},
		{name: "nothing", args: nil, problem: "missing KEY and COMMAND"},
		{name: "an empty key", args: []string{"", "--", "ls"}, problem: "KEY is empty"},
		{name: "no command", args: []string{"k", "--"}, problem: `missing COMMAND after "--"`},
		{name: "a flag after the key", args: []string{"k", "--wait", "1s", "--", "ls"}, problem: "flags go before KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, command, err := splitRunArguments(tt.args)
			if tt.problem != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.problem)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.key, key)
			assert.Equal(t, tt.command, command)
		})
	}
}

func TestChildEnvironment(t *testing.T) {
	parent := []string{"PATH=/bin", "REDLOCK_TOKEN=old", "REDLOCK_FENCE=9", "REDLOCK_KEY=old", "REDLOCK_ADDRS=a:1"}
	assert.Equal(t, []string{"PATH=/bin", "REDLOCK_ADDRS=a:1", "REDLOCK_KEY=k", "REDLOCK_TOKEN=t"},
		childEnvironment(parent, "k", "t", 0, false))
	assert.Equal(t, []string{"PATH=/bin", "REDLOCK_ADDRS=a:1", "REDLOCK_KEY=k", "REDLOCK_TOKEN=t", "REDLOCK_FENCE=12"},
		childEnvironment(parent, "k", "t", 12, true))
}

// Commands run with --read run together; a command run with --write runs
// alone, neither with a reader nor with another writer.
func TestRunReadersTogetherAndAWriterAlone(t *testing.T) {
	_, addresses := startNodes(t, 3, redistest.Options{})
	journal := filepath.Join(t.TempDir(), "journal")
	script := `echo "start $MODE $$" >> "$JOURNAL"; sleep 0.05; echo "end $MODE $$" >> "$JOURNAL"`
	var started []*process
	for i := range 6 {
		mode := "read"
		if i%3 == 0 {
			mode = "write"
		}
		started = append(started, startBinary(t, addresses, []string{"JOURNAL=" + journal, "MODE=" + mode},
			"run", "--wait", "2m", "--"+mode, "catalog", "--", "sh", "-c", script))
	}
	for _, p := range started {
		assert.Equal(t, exitOK, p.wait(t, 3*time.Minute), p.stderr.String())
	}

	lines := strings.Split(strings.TrimSpace(readFile(journal)), "\n")
	require.Len(t, lines, 12, "every process ran its command once")
	readers, writers := 0, 0
	for _, line := range lines {
		fields := strings.Fields(line)
		require.Len(t, fields, 3, line)
		delta := 1
		if fields[0] == "end" {
			delta = -1
		}
		if fields[1] == "write" {
			writers += delta
		} else {
			readers += delta
		}
		assert.False(t, writers > 1 || writers == 1 && readers > 0, "a writer ran with others: %v", lines)
	}
}

// Commands run with --fair run in the order they came: each one starts
// waiting once the one before it is in line, and they run in that order.
func TestRunFairRunsCommandsInTheOrderTheyCame(t *testing.T) {
	servers, addresses := startNodes(t, 3, redistest.Options{})
	directory := t.TempDir()
	journal, gate := filepath.Join(directory, "journal"), filepath.Join(directory, "gate")
	// The first command holds the lock until the gate opens.
	first := startBinary(t, addresses, []string{"JOURNAL=" + journal, "GATE=" + gate}, "run", "--fair", "printer", "--",
		"sh", "-c", `echo 0 >> "$JOURNAL"; while [ ! -e "$GATE" ]; do sleep 0.01; done`)
	require.Eventually(t, func() bool { return readFile(journal) == "0\n" }, time.Minute, 10*time.Millisecond)
	var waiting []*process
	for i := 1; i <= 3; i++ {
		waiting = append(waiting, startBinary(t, addresses, []string{"JOURNAL=" + journal, "N=" + strconv.Itoa(i)},
			"run", "--fair", "--wait", "2m", "printer", "--", "sh", "-c", `echo "$N" >> "$JOURNAL"`))
		require.Eventually(t, func() bool {
			line, _ := strconv.Atoi(servers[0].Do(t, "ZCARD", "printer:queue"))
			return line == i
		}, time.Minute, 10*time.Millisecond, "command %d did not take its place in line", i)
	}
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	assert.Equal(t, exitOK, first.wait(t, time.Minute), first.stderr.String())
	for _, p := range waiting {
		assert.Equal(t, exitOK, p.wait(t, time.Minute), p.stderr.String())
	}
	assert.Equal(t, "0\n1\n2\n3\n", readFile(journal))
}
