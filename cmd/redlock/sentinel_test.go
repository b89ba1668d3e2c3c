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
	status, doctor := commandsOverMember(t, group.Address())
	assert.Contains(t, status.stdout, "redis-sentinel://"+group.Sentinels[0].Addr()+"/locks")
	assert.Contains(t, doctor.stdout, "sentinel", "stderr:\n%s", doctor.stderr)
	assert.Contains(t, doctor.stdout, "3 sentinel(s) agree the master is "+group.Master().Addr())
}
