package conn_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
)

// ParseAddress reads every form it documents, and refuses the others with
// ErrInvalidAddress, never showing a password.
func TestParseAddress(t *testing.T) {
	tests := []struct {
		in   string
		want conn.Address
		name string // what String gives
	}{
		{in: "127.0.0.1:7000", want: conn.Address{Network: "tcp", Addr: "127.0.0.1:7000"}, name: "127.0.0.1:7000"},
		{in: "localhost", want: conn.Address{Network: "tcp", Addr: "localhost:6379"}, name: "localhost:6379"},
		{in: "redis://user:secret@127.0.0.1:7000/2", want: conn.Address{Network: "tcp", Addr: "127.0.0.1:7000", Username: "user", Password: "secret", DB: 2}, name: "127.0.0.1:7000"},
		{in: "redis://secret@127.0.0.1", want: conn.Address{Network: "tcp", Addr: "127.0.0.1:6379", Password: "secret"}, name: "127.0.0.1:6379"},
		{in: "rediss://127.0.0.1:7000", want: conn.Address{Network: "tcp", Addr: "127.0.0.1:7000", TLS: true}, name: "rediss://127.0.0.1:7000"},
		{in: "unix:///tmp/redis.sock", want: conn.Address{Network: "unix", Addr: "/tmp/redis.sock"}, name: "unix:///tmp/redis.sock"},
		{in: "redis-sentinel://127.0.0.1:26379/locks", want: conn.Address{Network: "tcp", MasterName: "locks", Sentinels: []string{"127.0.0.1:26379"}},
			name: "redis-sentinel://127.0.0.1:26379/locks"},
		{in: "redis-sentinel://user:secret@127.0.0.1/locks?addr=127.0.0.2:26380&addr=127.0.0.3",
			want: conn.Address{Network: "tcp", MasterName: "locks", Sentinels: []string{"127.0.0.1:26379", "127.0.0.2:26380", "127.0.0.3:26379"}, Username: "user", Password: "secret"},
			name: "redis-sentinel://127.0.0.1:26379/locks"},
		{in: "rediss-sentinel://127.0.0.1:26379/locks", want: conn.Address{Network: "tcp", TLS: true, MasterName: "locks", Sentinels: []string{"127.0.0.1:26379"}},
			name: "rediss-sentinel://127.0.0.1:26379/locks"},
		{in: "redis-sentinel://127.0.0.1:26379/locks?sentinel_username=watcher&sentinel_password=secret",
			want: conn.Address{Network: "tcp", MasterName: "locks", Sentinels: []string{"127.0.0.1:26379"}, SentinelUsername: "watcher", SentinelPassword: "secret"},
			name: "redis-sentinel://127.0.0.1:26379/locks"},
		{in: "redis-cluster://127.0.0.1:7000", want: conn.Address{Network: "tcp", Cluster: true, Seeds: []string{"127.0.0.1:7000"}},
			name: "redis-cluster://127.0.0.1:7000"},
		{in: "rediss-cluster://user:secret@127.0.0.1:7000/?addr=127.0.0.2:7001&addr=127.0.0.3",
			want: conn.Address{Network: "tcp", TLS: true, Cluster: true, Seeds: []string{"127.0.0.1:7000", "127.0.0.2:7001", "127.0.0.3:6379"}, Username: "user", Password: "secret"},
			name: "rediss-cluster://127.0.0.1:7000"},
	}
	for _, test := range tests {
		t.Run(test.in, func(t *testing.T) {
			got, err := conn.ParseAddress(test.in)
			require.NoError(t, err)
			assert.Equal(t, test.want, got)
			assert.Equal(t, test.name, got.String())
		})
	}
	for _, bad := range []string{
		"", "redis://", "redis://127.0.0.1:0", "redis://127.0.0.1:7000/x", "redis://127.0.0.1:7000?addr=x", "http://127.0.0.1",
		"redis-sentinel://127.0.0.1:26379", "redis-sentinel://127.0.0.1:26379/", "redis-sentinel://127.0.0.1:26379/a/b",
		"redis-sentinel://127.0.0.1:26379/locks?db=2", "redis-sentinel://127.0.0.1:26379/locks?addr=127.0.0.1:99999",
		"redis-sentinel://user:secret@127.0.0.1:26379/locks#x",
		"redis-sentinel://127.0.0.1:26379/locks?sentinel_password=secret&sentinel_password=secret",
		"redis-sentinel://127.0.0.1:26379/locks?sentinel_password=secret&db=2",
		"redis-sentinel://127.0.0.1:26379/locks?sentinel_password=secret&addr=127.0.0.1:0",
		"redis-cluster://user:secret@127.0.0.1:7000/2", "redis-cluster://user:secret@127.0.0.1:7000?db=2",
		"redis-cluster://user:secret@127.0.0.1:7000?addr=127.0.0.1:0", "redis-cluster://user:secret@:7000",
	} {
		t.Run("refused "+bad, func(t *testing.T) {
			_, err := conn.ParseAddress(bad)
			require.ErrorIs(t, err, conn.ErrInvalidAddress)
			assert.NotContains(t, err.Error(), "secret")
		})
	}
}

// A Conn reaches one server: a Redis Cluster's address, whose slots are on
// many, is refused with a pointer to what takes it.
func TestNewRefusesAClusterAddress(t *testing.T) {
	_, err := conn.New("redis-cluster://127.0.0.1:7000", conn.Options{})
	require.ErrorIs(t, err, conn.ErrInvalidAddress)
	assert.Contains(t, err.Error(), "mux.New")
}
