package conn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// serverPort returns the port of the server a Conn reaches.
func serverPort(t *testing.T, c *conn.Conn) string {
	t.Helper()
	info := string(do(t, c, "INFO", "server").Str)
	for line := range strings.Lines(info) {
		if port, found := strings.CutPrefix(strings.TrimSpace(line), "tcp_port:"); found {
			return port
		}
	}
	t.Fatalf("INFO server has no tcp_port: %q", info)
	return ""
}

// A Conn to a master that Redis Sentinel serves asks the sentinels where
// the master is, and follows it when they move it: the connection to the
// old master is closed at the sentinels' announcement, and the next
// command reaches the new one.
func TestSentinelAddressFollowsTheMaster(t *testing.T) {
	group := redistest.StartSentinelGroup(t, "locks", 3, redistest.Options{})
	c, err := conn.New(group.Address(), conn.Options{})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Connect(context.Background()))
	assert.Equal(t, portOf(group.Master().Addr()), serverPort(t, c))
	assert.True(t, do(t, c, "SET", "k", "v").IsOK())

	next := group.Failover()
	for deadline := time.Now().Add(10 * time.Second); ; {
		call := conn.Call{Command: resp.AppendCommand(nil, "SET", "k", "w")}
		err := c.Do(context.Background(), &call)
		if err == nil && !call.Reply.IsError() {
			break
		}
		// The old master, demoted, answers READONLY, or its connection was
		// closed at the announcement: either way the next command dials.
		if err == nil {
			assert.Equal(t, "READONLY", string(resp.ErrorCode(call.Reply.Str)), "%s", call.Reply)
		} else {
			assert.ErrorIs(t, err, conn.ErrNotMaster)
		}
		require.False(t, time.Now().After(deadline), "the Conn did not follow the master")
	}
	assert.Equal(t, portOf(next.Addr()), serverPort(t, c))
	assert.Equal(t, "w", next.Do(t, "GET", "k"))
}

// A sentinel that knows no such master, or names a server that is not a
// master, fails the dial with a clear error.
func TestSentinelAddressRefusesWhatIsNotTheMaster(t *testing.T) {
	group := redistest.StartSentinelGroup(t, "locks", 1, redistest.Options{})
	unknown, err := conn.New("redis-sentinel://"+group.Sentinels[0].Addr()+"/other", conn.Options{})
	require.NoError(t, err)
	defer unknown.Close()
	err = unknown.Connect(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `serves no master named "other"`)

	// The replica, named as if it were the master by a fake sentinel.
	replica := group.Servers[1]
	fake := fakeSentinel(t, replica.Addr())
	demoted, err := conn.New("redis-sentinel://"+fake+"/locks", conn.Options{})
	require.NoError(t, err)
	defer demoted.Close()
	err = demoted.Connect(context.Background())
	require.ErrorIs(t, err, conn.ErrNotMaster)
	assert.Contains(t, err.Error(), "slave")
}

// fakeSentinel starts a sentinel that names master for every name, and
// accepts the watcher's subscription without ever announcing anything.
func fakeSentinel(t *testing.T, master string) string {
	host, port, _ := strings.Cut(master, ":")
	fake := redistest.NewFake(t, func(command []string) []byte {
		switch strings.ToUpper(command[0]) {
		case "SENTINEL":
			return resp.AppendValue(nil, resp.Value{Type: resp.TypeArray, Elems: []resp.Value{
				{Type: resp.TypeBulkString, Str: []byte(host)}, {Type: resp.TypeBulkString, Str: []byte(port)}}})
		case "SUBSCRIBE":
			return []byte("*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n")
		}
		return []byte("-ERR unexpected command\r\n")
	})
	return fake.Addr()
}

// portOf returns the port of "host:port".
func portOf(address string) string {
	_, port, _ := strings.Cut(address, ":")
	return port
}

// Sentinels that ask for a password get it from the address's
// sentinel_password parameter; without it the dial fails with ErrAuth,
// and the password is in no message.
func TestSentinelAddressAuthenticatesToTheSentinels(t *testing.T) {
	group := redistest.StartSentinelGroupWithPassword(t, "locks", 1, redistest.Options{}, "sentinel-secret")
	c, err := conn.New(group.Address(), conn.Options{})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Connect(context.Background()))
	assert.Equal(t, portOf(group.Master().Addr()), serverPort(t, c))

	without, err := conn.New("redis-sentinel://"+group.Sentinels[0].Addr()+"/locks", conn.Options{})
	require.NoError(t, err)
	defer without.Close()
	err = without.Connect(context.Background())
	require.ErrorIs(t, err, conn.ErrAuth)
	assert.Contains(t, err.Error(), "NOAUTH")

	wrong, err := conn.New("redis-sentinel://"+group.Sentinels[0].Addr()+"/locks?sentinel_password=wrong-secret", conn.Options{})
	require.NoError(t, err)
	defer wrong.Close()
	err = wrong.Connect(context.Background())
	require.ErrorIs(t, err, conn.ErrAuth)
	assert.NotContains(t, err.Error(), "wrong-secret")
}
