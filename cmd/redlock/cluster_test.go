package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/internal/redistest"
)

// The commands take a Redis Cluster member's address as any other, in a
// list with plain ones: trust-nodes states the new masters, run holds the
// lock on the master of its key's slot, status reads it there, and doctor
// checks the cluster's state.
func TestCommandsTakeClusterAddresses(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	plain := redistest.StartN(t, 2, redistest.Options{})
	variables := map[string]string{addressesVariable: cluster.Address() + "," + plain[0].Addr() + "," + plain[1].Addr()}

	trusted := invoke(t, variables, "trust-nodes", "--force")
	assert.Equal(t, exitOK, trusted.status, "stderr:\n%s", trusted.stderr)

	run := invoke(t, variables, "run", "job", "--", "sh", "-c", `test "$REDLOCK_KEY" = job`)
	assert.Equal(t, exitOK, run.status, "stderr:\n%s", run.stderr)

	status := invoke(t, variables, "status", "job")
	assert.Equal(t, exitFailed, status.status, "released, the key is free; stderr:\n%s", status.stderr)
	assert.Contains(t, status.stdout, "redis-cluster://"+cluster.Masters[0].Addr())
	assert.Regexp(t, "redis-cluster://"+cluster.Masters[0].Addr()+`\S*: epoch marker \S+ old`, status.stdout, "the masters' markers, stated new, are read")

	doctor := invoke(t, variables, "doctor")
	assert.Contains(t, doctor.stdout, "3 master(s) serving every slot", "stderr:\n%s", doctor.stderr)
}
