//go:build !race

package redlock

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// TestBlockingLockDoesNotAllocate pins the zero-allocation claim of a
// blocking acquisition that waits for another's release, in steady state:
// the same goroutine acquires the same key again and again, each time
// after the holder, in another Client, released it, or in the same Client.
func TestBlockingLockDoesNotAllocate(t *testing.T) {
	redistest.RequireReal(t) // an in-process server's allocations would count too
	for _, n := range []int{1, 3, 5} {
		nodes := startCluster(t, n, redistest.Options{})
		options := Options{NodeTimeout: 5 * time.Second}
		waiterClient := nodes.client(t, options)
		clients := map[string]*Client{"another Client": nodes.client(t, options), "the same Client": waiterClient}
		for where, holderClient := range clients {
			for _, c := range blockingCases(waiterClient, holderClient) {
				t.Run("N="+strconv.Itoa(n)+"/"+c.name+"/held in "+where, func(t *testing.T) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					acquisition, stop := blockingHandoff(ctx, c)
					defer stop()
					for range 3 {
						acquisition()
					}
					for _, client := range []*Client{waiterClient, holderClient} {
						waitArmed(t, client)
					}
					assert.Zero(t, testing.AllocsPerRun(50, acquisition))
					require.NoError(t, ctx.Err())
				})
			}
		}
	}
}
