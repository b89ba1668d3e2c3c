package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/internal/redistest"
)

// The commands take a Sentinel member's address as any other, in a list
// with plain ones: trust-nodes states the new servers, run holds the lock
// on the master the sentinels name, status reads it there, and doctor asks
// the sentinels.
func TestCommandsTakeSentinelAddresses(t *testing.T) {
	group := redistest.StartSentinelGroup(t, "locks", 3, redistest.Options{})
	plain := redistest.StartN(t, 2, redistest.Options{})
	variables := map[string]string{addressesVariable: group.Address() + "," + plain[0].Addr() + "," + plain[1].Addr()}

	trusted := invoke(t, variables, "trust-nodes", "--force")
	assert.Equal(t, exitOK, trusted.status, "stderr:\n%s", trusted.stderr)

	run := invoke(t, variables, "run", "job", "--", "sh", "-c", `test "$REDLOCK_KEY" = job`)
	assert.Equal(t, exitOK, run.status, "stderr:\n%s", run.stderr)

	status := invoke(t, variables, "status", "job")
	assert.Equal(t, exitFailed, status.status, "released, the key is free; stderr:\n%s", status.stderr)
	assert.Contains(t, status.stdout, "redis-sentinel://"+group.Sentinels[0].Addr()+"/locks")

	doctor := invoke(t, variables, "doctor")
	assert.Contains(t, doctor.stdout, "sentinel", "stderr:\n%s", doctor.stderr)
	assert.Contains(t, doctor.stdout, "3 sentinel(s) agree the master is "+group.Master().Addr())
}
