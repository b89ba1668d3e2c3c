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

// F27: rejected credentials and missing permissions are configuration
// errors, reported by the first lock at once, without retrying. New does
// not dial, so it cannot know them.
func TestAuthenticationErrorsFailTheFirstLock(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{
		Password: "secret",
		ACLUsers: []string{"noeval on >pw ~* +@all -eval -evalsha -script"},
	})
	tests := []struct {
		name    string
		address string
		options Options
	}{
		{name: "no password", address: server.Addr()},
		{name: "wrong password", address: server.Addr(), options: Options{Password: "wrong"}},
		{name: "user without scripts", address: "redis://noeval:pw@" + server.Addr()},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			client, err := New([]string{test.address}, test.options)
			require.NoError(t, err)
			defer client.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			err = client.NewMutex("k", MutexOptions{}).Lock(ctx)
			require.ErrorIs(t, err, ErrConfig)
			assert.ErrorIs(t, err, ErrQuorumUnreachable)
			assert.NotContains(t, err.Error(), "secret")
			assert.NoError(t, ctx.Err(), "Lock did not retry until its context ended")
		})
	}
	client, err := New([]string{server.Addr()}, Options{Password: "secret"})
	require.NoError(t, err)
	defer client.Close()
	m := client.NewMutex("k", MutexOptions{})
	require.NoError(t, m.Lock(context.Background()))
	require.NoError(t, m.Unlock(context.Background()))
}

// F21: a node that became a replica answers READONLY: a configuration
// error, never "held by another". When it leaves no quorum, Lock says so at
// once instead of retrying.
func TestReadOnlyReplicaIsAConfigurationError(t *testing.T) {
	redistest.RequireReal(t)
	primary := redistest.Start(t, redistest.Options{})
	replica := redistest.Start(t, redistest.Options{ExtraArgs: []string{"--replicaof", "127.0.0.1", itoa(primary.Port())}})
	client, err := New([]string{replica.Addr()}, Options{})
	require.NoError(t, err)
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	err = client.NewMutex("k", MutexOptions{}).Lock(ctx)
	require.ErrorIs(t, err, ErrConfig)
	assert.ErrorIs(t, err, ErrQuorumUnreachable)
	assert.Contains(t, err.Error(), "READONLY")
	assert.NoError(t, ctx.Err(), "Lock did not retry until its context ended")
}

// F26: a lock key of the wrong type makes the scripts fail with WRONGTYPE,
// a configuration error.
func TestWrongTypeIsAConfigurationError(t *testing.T) {
	redistest.RequireReal(t) // miniredis's Lua does not raise WRONGTYPE the same way
	nodes := startCluster(t, 1, redistest.Options{})
	client := nodes.client(t, Options{})
	client.do(t, 0, "RPUSH", "list", "x")
	m := client.NewMutex("k", MutexOptions{Keys: []string{"list"}})
	err := m.TryLock(context.Background())
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "WRONGTYPE")
}

func itoa(n int) string { return strconv.Itoa(n) }
