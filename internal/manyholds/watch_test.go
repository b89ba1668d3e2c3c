package manyholds

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/redlock"
)

// A renewal is late by how much later than a third of the TTL after the
// hold's previous extension it started; one after a failed extension
// follows another schedule and is not timed.
func TestWatchTimesRenewalsAgainstTheirSchedule(t *testing.T) {
	w := newWatch(2, 10*time.Second, len("k:"))
	w.base = w.base.Add(-time.Minute) // readings since base are positive
	w.counting.Store(true)
	w.last[0].Store(int64(time.Since(w.base) - 10*time.Second - 300*time.Millisecond - 50*time.Millisecond))
	w.OnExtend(redlock.ExtendEvent{Key: "k:0", Automatic: true, Elapsed: 50 * time.Millisecond})
	late := w.lateness.Summary().Maximum
	assert.GreaterOrEqual(t, late, 300*time.Millisecond)
	assert.Less(t, late, 10*time.Second, "the lateness is measured from the schedule")

	w.OnExtend(redlock.ExtendEvent{Key: "k:1", Automatic: true, Err: errors.New("refused")})
	w.OnExtend(redlock.ExtendEvent{Key: "k:1", Automatic: true})
	w.OnExtend(redlock.ExtendEvent{Key: "k:1"})                    // Extend's, not the renewal's
	w.OnExtend(redlock.ExtendEvent{Key: "other", Automatic: true}) // not a hold of the run
	assert.Equal(t, uint64(3), w.renewals.Load())
	assert.Equal(t, uint64(1), w.failed.Load())
	w.OnLost(redlock.LostEvent{})
	assert.Equal(t, int64(1), w.lost.Load())
}

func TestInfoCount(t *testing.T) {
	info := []byte("# Stats\r\ntotal_commands_processed:1234\r\n# Commandstats\r\ncmdstat_evalsha:calls=56,usec=7\r\n")
	n, err := infoCount(info, "total_commands_processed:")
	assert.NoError(t, err)
	assert.Equal(t, uint64(1234), n)
	n, err = infoCount(info, "cmdstat_evalsha:calls=")
	assert.NoError(t, err)
	assert.Equal(t, uint64(56), n)
	_, err = infoCount(info, "cmdstat_eval:calls=")
	assert.Error(t, err)
}
