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
	status, doctor := commandsOverMember(t, cluster.Address())
	assert.Contains(t, status.stdout, "redis-cluster://"+cluster.Masters[0].Addr())
	assert.Regexp(t, "redis-cluster://"+cluster.Masters[0].Addr()+`\S*: epoch marker stated new`, status.stdout, "the masters' markers, stated new, are read")
	assert.Contains(t, doctor.stdout, "3 master(s) serving every slot", "stderr:\n%s", doctor.stderr)
}
