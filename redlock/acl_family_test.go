package redlock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// The parts of the ACL rule that the lock family needs besides the
// minimal rule, as docs/acl.md names them: a user with them can use the
// type, and a user without any one of them cannot. The keys of a
// read/write or fair lock follow its name (NAME:readers, NAME:queue…): the
// user's pattern ends in *.
func TestLockFamilyACLParts(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	// A read/write lock also needs +exists, for the repair of a read hold
	// on a node that lost it, which these uses do not make.
	sortedSets := []string{"+time", "+zadd", "+zrem", "+zscore", "+zrange", "+zremrangebyscore"}
	tests := []struct {
		name   string
		parts  []string
		always []string // granted, and not taken away: these uses do not show what they serve
		use    func(ctx context.Context, client *Client, admin func(...string) string) error
	}{
		{name: "read/write lock", parts: sortedSets, always: []string{"+exists"}, use: useReadWriteLock},
		{name: "fair lock", parts: append(append([]string(nil), sortedSets...), "+exists", "+zrangebyscore"), use: useFairLock},
		{name: "semaphore", parts: nil, use: useSemaphore},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for without := -1; without < len(tt.parts); without++ {
				var granted []string
				for j, part := range tt.parts {
					if j != without {
						granted = append(granted, part)
					}
				}
				user := "family-" + strconv.Itoa(i) + "-" + strconv.Itoa(without+1)
				granted = append(append(granted, tt.always...), "~orders:*")
				// +time is given by the parts under test alone; the
				// quarantine, which also needs it, is off.
				require.Equal(t, "OK", server.Do(t, userRule(user, "+time", granted...)...))
				client, err := New([]string{"redis://" + user + ":pw@" + server.Addr()},
					Options{RetryDelayMin: 5 * time.Millisecond, RetryDelayMax: 10 * time.Millisecond, Quarantine: QuarantineOff})
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err = tt.use(ctx, client, func(args ...string) string { return server.Do(t, args...) })
				cancel()
				client.Close()
				if without < 0 {
					assert.NoError(t, err, "with every part")
					continue
				}
				part := tt.parts[without]
				if assert.Error(t, err, "without %s", part) {
					assert.True(t, errors.Is(err, ErrConfig), "without %s: %v", part, err)
					assert.True(t, strings.Contains(err.Error(), "NOPERM") || strings.Contains(err.Error(), "script"), "without %s: %v", part, err)
				}
			}
		})
	}
}

// useReadWriteLock takes and gives back a read hold, then the write hold.
func useReadWriteLock(ctx context.Context, client *Client, _ func(...string) string) error {
	rw := client.NewRWMutex("orders:rw", MutexOptions{})
	if err := rw.RLock(ctx); err != nil {
		return err
	}
	if err := rw.RUnlock(ctx); err != nil {
		return err
	}
	if err := rw.Lock(ctx); err != nil {
		return err
	}
	return rw.Unlock(ctx)
}

// useFairLock has a waiter wait in line for a holder's release; admin
// runs a command as an administrator, to see the waiter in line.
func useFairLock(ctx context.Context, client *Client, admin func(...string) string) error {
	options := MutexOptions{TTL: 10 * time.Second, Fair: true}
	holder := client.NewMutex("orders:fair", options)
	if err := holder.Lock(ctx); err != nil {
		return err
	}
	waiter := client.NewMutex("orders:fair", options)
	waited := make(chan error, 1)
	go func() { waited <- waiter.Lock(ctx) }()
	// The waiter's first attempt is refused, and it joins the line, or
	// fails; the holder's release then lets it in.
	var err error
	inLine := waitUntil(func() bool {
		select {
		case err = <-waited:
			return true
		default:
			return admin("ZCARD", "orders:fair:queue") != "0"
		}
	})
	if unlockErr := holder.Unlock(ctx); err == nil {
		err = unlockErr
	}
	switch {
	case err != nil:
		return err
	case !inLine:
		return errors.New("the waiter never joined the line")
	}
	if err := <-waited; err != nil {
		return err
	}
	return waiter.Unlock(ctx)
}

// useSemaphore acquires a permit, counts the free ones and releases it.
func useSemaphore(ctx context.Context, client *Client, _ func(...string) string) error {
	semaphore := client.NewSemaphore("orders:pool", 2, MutexOptions{})
	permit, err := semaphore.Acquire(ctx)
	if err != nil {
		return err
	}
	if _, err := semaphore.Available(ctx); err != nil {
		return err
	}
	return permit.Release(ctx)
}
