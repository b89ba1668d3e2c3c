package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// Processes that campaign in one election run their commands one at a
// time, each in a term larger than the one before, each with its value.
func TestElectLeadersNeverOverlap(t *testing.T) {
	_, addresses := startNodes(t, 5, redistest.Options{})
	journal := filepath.Join(t.TempDir(), "journal")
	const processes = 4
	script := `echo "start $REDLOCK_TOKEN $REDLOCK_FENCE $REDLOCK_KEY" >> "$JOURNAL"; sleep 0.05; echo "end $REDLOCK_TOKEN" >> "$JOURNAL"`
	started := make([]*process, processes)
	for i := range started {
		started[i] = startBinary(t, addresses, []string{"JOURNAL=" + journal},
			"elect", "--value", fmt.Sprintf("candidate-%d", i), "scheduler", "--", "sh", "-c", script)
	}
	for _, p := range started {
		assert.Equal(t, exitOK, p.wait(t, 3*time.Minute), p.stderr.String())
	}

	lines := strings.Split(strings.TrimSpace(readFile(journal)), "\n")
	require.Len(t, lines, 2*processes, "every process ran its command once")
	seen := make(map[string]bool)
	var last int64
	for i := 0; i < len(lines); i += 2 {
		start, end := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		require.Len(t, start, 4, "line %d: %v", i, lines)
		assert.Equal(t, "start", start[0])
		assert.Equal(t, "scheduler", start[3], "REDLOCK_KEY")
		assert.Equal(t, []string{"end", start[1]}, end, "the leadership of %s was interleaved: %v", start[1], lines)
		assert.False(t, seen[start[1]], "%s led twice", start[1])
		seen[start[1]] = true
		term, err := strconv.ParseInt(start[2], 10, 64)
		require.NoError(t, err)
		assert.Greater(t, term, last, "terms: %v", lines)
		last = term
	}
}

// A leader that loses its leadership has its command stopped, campaigns
// again, and runs the command anew in a larger term once it leads.
func TestElectCampaignsAgainAfterALoss(t *testing.T) {
	redistest.RequireReal(t) // pauses servers
	servers, addresses := startNodes(t, 5, redistest.Options{})
	marker := filepath.Join(t.TempDir(), "marker")
	script := `echo "started $REDLOCK_FENCE" >> "$MARKER"; trap 'echo TERM >> "$MARKER"; exit 0' TERM; while :; do sleep 0.02; done`
	p := startBinary(t, addresses, []string{"MARKER=" + marker},
		"elect", "--ttl", "1s", "--grace", "2s", "scheduler", "--", "sh", "-c", script)
	lines := func() []string { return strings.Split(strings.TrimSpace(readFile(marker)), "\n") }
	require.Eventually(t, func() bool { return strings.HasPrefix(readFile(marker), "started") }, 10*time.Second, 10*time.Millisecond)

	for _, server := range servers[:3] {
		server.Stop()
	}
	require.Eventually(t, func() bool { return len(lines()) >= 2 }, 20*time.Second, 10*time.Millisecond,
		"the command was not stopped when the leadership was lost")
	for _, server := range servers[:3] {
		server.Cont()
	}
	require.Eventually(t, func() bool { return len(lines()) >= 3 }, 30*time.Second, 10*time.Millisecond,
		"the command did not run again once the nodes were back")
	require.NoError(t, p.command.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, exitOK, p.wait(t, 20*time.Second), "the command's status: it exits 0 on SIGTERM")

	got := lines()
	require.Len(t, got, 4, "%v\n%s", got, p.stderr.String())
	first, second := strings.Fields(got[0]), strings.Fields(got[2])
	assert.Equal(t, []string{"TERM", "TERM"}, []string{got[1], got[3]})
	require.Len(t, first, 2)
	require.Len(t, second, 2)
	firstTerm, err := strconv.ParseInt(first[1], 10, 64)
	require.NoError(t, err)
	secondTerm, err := strconv.ParseInt(second[1], 10, 64)
	require.NoError(t, err)
	assert.Greater(t, secondTerm, firstTerm)
	assert.Contains(t, p.stderr.String(), `lost the lock "scheduler" while the command ran`)
	assert.Contains(t, p.stderr.String(), `campaigning again in "scheduler"`)
}
