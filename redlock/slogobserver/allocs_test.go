//go:build !race

package slogobserver_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/slogobserver"
)

// TestQuietLockCycleDoesNotAllocate pins that an Observer whose logger's
// level is above the events' adds no allocation to an uncontended
// Lock+Unlock cycle.
func TestQuietLockCycleDoesNotAllocate(t *testing.T) {
	redistest.RequireReal(t) // an in-process server's allocations would count too
	for _, n := range []int{1, 3} {
		t.Run("N="+strconv.Itoa(n), func(t *testing.T) {
			logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
			client, err := redlock.New(startNodes(t, n), redlock.Options{
				NodeTimeout: 5 * time.Second,
				Quarantine:  redlock.QuarantineOff, // its marker watch arms in the background: redlock's own tests pin it
				Observer:    slogobserver.New(logger),
			})
			require.NoError(t, err)
			defer client.Close()
			ctx := context.Background()
			m := client.NewMutex("allocs:slog", redlock.MutexOptions{})
			cycle := func() {
				if err := m.Lock(ctx); err != nil {
					panic(err)
				}
				if err := m.Unlock(ctx); err != nil {
					panic(err)
				}
			}
			cycle()
			assert.Zero(t, testing.AllocsPerRun(100, cycle))
		})
	}
}
