package redistest

import (
	"bufio"
	"crypto/tls"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartAnswersPing(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{})
	assert.Equal(t, Available(), s.IsReal())
	assert.Equal(t, "PONG", s.Do(t, "PING"))
	assert.Equal(t, "OK", s.Do(t, "SET", "k", "v"))
	assert.Equal(t, "v", s.Do(t, "GET", "k"))
	assert.Equal(t, "(nil)", s.Do(t, "GET", "missing"))
	assert.True(t, strings.HasPrefix(s.Do(t, "INCR", "k"), "-ERR"), "errors keep their minus sign")
	assert.True(t, strings.HasPrefix(s.Addr(), "127.0.0.1:"))
	if s.IsReal() {
		assert.Positive(t, s.PID())
		assert.NotEmpty(t, s.Dir())
		assert.Contains(t, s.LogTail(50), "Ready to accept connections")
		assert.Nil(t, s.Miniredis())
	}
}

func TestStartNGivesDistinctServers(t *testing.T) {
	t.Parallel()
	servers := StartN(t, 3, Options{})
	require.Len(t, servers, 3)
	seen := map[string]bool{}
	for i, s := range servers {
		assert.False(t, seen[s.Addr()], "address %s used twice", s.Addr())
		seen[s.Addr()] = true
		s.Do(t, "SET", "node", s.Addr())
		assert.Equal(t, s.Addr(), servers[i].Do(t, "GET", "node"))
	}
}

func TestStopAndCont(t *testing.T) {
	t.Parallel()
	RequireReal(t)
	s := Start(t, Options{})
	s.Stop()
	_, err := roundTrip(s.Addr(), nil, "", 200*time.Millisecond, "PING")
	require.Error(t, err, "a stopped server must not answer")
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	s.Cont()
	assert.Equal(t, "PONG", s.Do(t, "PING"))

	t.Run("cleanup kills a stopped server", func(t *testing.T) {
		stopped := Start(t, Options{})
		stopped.Stop()
	})
	t.Run("shutdown of a stopped server", func(t *testing.T) {
		stopped := Start(t, Options{})
		stopped.Stop()
		stopped.Shutdown()
		assert.Zero(t, stopped.PID())
	})
}

func TestKill9AndRestart(t *testing.T) {
	t.Parallel()
	RequireReal(t)
	tests := []struct {
		name        string
		persistence Persistence
		want        string
	}{
		{name: "aof always keeps the key", persistence: PersistenceAOF, want: "v"},
		{name: "no persistence loses the key", persistence: PersistenceNone, want: "(nil)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := Start(t, Options{Persistence: tt.persistence})
			port, pid := s.Port(), s.PID()
			require.Equal(t, "OK", s.Do(t, "SET", "k", "v"))

			s.Kill9()
			s.Kill9() // idempotent
			assert.Zero(t, s.PID())
			_, err := roundTrip(s.Addr(), nil, "", time.Second, "PING")
			require.Error(t, err, "a killed server must not answer")

			s.Restart(t)
			assert.Equal(t, port, s.Port())
			assert.NotEqual(t, pid, s.PID())
			assert.Equal(t, tt.want, s.Do(t, "GET", "k"))
		})
	}
}

func TestWipeEmptiesPersistentServer(t *testing.T) {
	t.Parallel()
	RequireReal(t)
	s := Start(t, Options{Persistence: PersistenceAOF})
	require.Equal(t, "OK", s.Do(t, "SET", "k", "v"))
	s.Shutdown()
	s.Shutdown() // idempotent
	s.Wipe()
	s.Restart(t)
	assert.Equal(t, "(nil)", s.Do(t, "GET", "k"))
	assert.Equal(t, 2, strings.Count(s.LogTail(1000), "Ready to accept connections"), "Wipe keeps the log")
}

func TestRestartShutsDownARunningServer(t *testing.T) {
	t.Parallel()
	RequireReal(t)
	s := Start(t, Options{Persistence: PersistenceAOF})
	require.Equal(t, "OK", s.Do(t, "SET", "k", "v"))
	s.Restart(t)
	assert.Equal(t, "v", s.Do(t, "GET", "k"))
}

func TestPasswordIsRequired(t *testing.T) {
	t.Parallel()
	for _, miniredis := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "miniredis"}[miniredis], func(t *testing.T) {
			t.Parallel()
			s := Start(t, Options{Password: "secret", Miniredis: miniredis})
			reply, err := roundTrip(s.Addr(), nil, "", time.Second, "GET", "k")
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(reply, "-NOAUTH"), "reply %q", reply)
			assert.Equal(t, "PONG", s.Do(t, "PING"), "Do authenticates")
		})
	}
}

func TestACLUsers(t *testing.T) {
	t.Parallel()
	RequireReal(t)
	s := Start(t, Options{ACLUsers: []string{"locker on >pw ~* +@all -eval"}})

	conn, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	reader := bufio.NewReader(conn)

	reply, err := exchange(conn, reader, "AUTH", "locker", "pw")
	require.NoError(t, err)
	assert.Equal(t, "OK", reply)
	reply, err = exchange(conn, reader, "SET", "k", "v")
	require.NoError(t, err)
	assert.Equal(t, "OK", reply)
	reply, err = exchange(conn, reader, "EVAL", "return 1", "0")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(reply, "-NOPERM"), "reply %q", reply)
}

func TestTLS(t *testing.T) {
	t.Parallel()
	for _, miniredis := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "miniredis"}[miniredis], func(t *testing.T) {
			t.Parallel()
			s := Start(t, Options{TLS: true, Password: "secret", Miniredis: miniredis})
			config := s.TLSConfig()
			require.NotNil(t, config)

			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", s.Addr(), config)
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
			reader := bufio.NewReader(conn)
			reply, err := exchange(conn, reader, "AUTH", "secret")
			require.NoError(t, err)
			assert.Equal(t, "OK", reply)
			reply, err = exchange(conn, reader, "PING")
			require.NoError(t, err)
			assert.Equal(t, "PONG", reply)

			assert.Equal(t, "PONG", s.Do(t, "PING"), "Do speaks TLS")
			_, err = roundTrip(s.Addr(), nil, "", 300*time.Millisecond, "PING")
			assert.Error(t, err, "plain text must not work")
		})
	}
	t.Run("no TLS", func(t *testing.T) {
		t.Parallel()
		assert.Nil(t, Start(t, Options{}).TLSConfig())
	})
}

func TestOptionsReachTheServer(t *testing.T) {
	t.Parallel()
	RequireReal(t)
	s := Start(t, Options{ExtraArgs: []string{"--maxmemory-policy", "noeviction"}, Env: []string{"LOCKMUX_TEST=1"}})
	assert.Equal(t, "[maxmemory-policy noeviction]", s.Do(t, "CONFIG", "GET", "maxmemory-policy"))
	assert.Equal(t, "[appendonly no]", s.Do(t, "CONFIG", "GET", "appendonly"))
	assert.Equal(t, "OK", s.Do(t, "DEBUG", "SLEEP", "0"))

	persistent := Start(t, Options{Persistence: PersistenceAOF, DisableDebugCommand: true})
	assert.Equal(t, "[appendfsync always]", persistent.Do(t, "CONFIG", "GET", "appendfsync"))
	assert.True(t, strings.HasPrefix(persistent.Do(t, "DEBUG", "SLEEP", "0"), "-ERR"))
}

func TestPortTakenIsDetected(t *testing.T) {
	t.Parallel()
	RequireReal(t)
	binary, err := lookupBinary()
	require.NoError(t, err)
	tests := []struct {
		name string
		take func(t *testing.T) int // occupies a port and returns it
	}{
		{name: "by a listener", take: func(t *testing.T) int {
			listener, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { listener.Close() })
			return listener.Addr().(*net.TCPAddr).Port
		}},
		{name: "by another redis-server", take: func(t *testing.T) int {
			return Start(t, Options{}).Port()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &Server{
				t:        t,
				binary:   binary,
				port:     tt.take(t),
				dir:      t.TempDir(),
				stateDir: t.TempDir(),
			}
			t.Cleanup(s.cleanup)

			s.mu.Lock()
			err := s.launchLocked()
			s.mu.Unlock()
			require.Error(t, err, "a PONG from another server must not count")
			assert.True(t, isAddressInUse(err), "error %v", err)
			assert.Zero(t, s.PID())
		})
	}
}
