package redistest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A crashed master that rejoins follows the replica that took its place,
// and the shard can crash again: its second Crash kills the promoted
// replica and promotes the master that rejoined, which serves the
// shard's slots.
func TestClusterRejoinMakesTheCrashedMasterTheReplica(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, true, Options{})
	first, second := c.Masters[0], c.Replicas[0]
	assert.Equal(t, second, c.Crash(0))
	c.Rejoin(0)
	assert.Equal(t, second, c.Masters[0], "the promoted replica is the shard's master")
	assert.Equal(t, first, c.Replicas[0], "the crashed master is its replica")
	assert.True(t, strings.HasPrefix(first.Do(t, "ROLE"), "[slave "), "the crashed master follows")

	assert.Equal(t, first, c.Crash(0), "the master that rejoined takes the shard back")
	assert.Equal(t, first, c.MasterOf(0))
}
