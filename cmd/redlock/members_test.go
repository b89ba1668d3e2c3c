package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/internal/redistest"
)

// commandsOverMember runs the commands over member and two plain servers,
// as a list, and requires trust-nodes to state the new servers and run to
// hold the lock on the master each member names; it returns what status,
// after the release, and doctor said.
func commandsOverMember(t *testing.T, member string) (status, doctor invocation) {
	t.Helper()
	plain := redistest.StartN(t, 2, redistest.Options{})
	variables := map[string]string{addressesVariable: member + "," + plain[0].Addr() + "," + plain[1].Addr()}

	trusted := invoke(t, variables, "trust-nodes", "--force")
	assert.Equal(t, exitOK, trusted.status, "stderr:\n%s", trusted.stderr)

	run := invoke(t, variables, "run", "job", "--", "sh", "-c", `test "$REDLOCK_KEY" = job`)
	assert.Equal(t, exitOK, run.status, "stderr:\n%s", run.stderr)

	status = invoke(t, variables, "status", "job")
	assert.Equal(t, exitFailed, status.status, "released, the key is free; stderr:\n%s", status.stderr)
	return status, invoke(t, variables, "doctor")
}
