package redistest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChooseBackend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		haveBinary    bool
		requireReal   bool
		wantMiniredis bool
		want          backend
	}{
		{name: "binary present", haveBinary: true, want: backendReal},
		{name: "binary present and required", haveBinary: true, requireReal: true, want: backendReal},
		{name: "binary missing falls back", want: backendMiniredis},
		{name: "binary missing but required fails", requireReal: true, want: backendMissing},
		{name: "miniredis asked for", haveBinary: true, wantMiniredis: true, want: backendMiniredis},
		{name: "miniredis asked for while required", requireReal: true, wantMiniredis: true, want: backendMiniredis},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, chooseBackend(tt.haveBinary, tt.requireReal, tt.wantMiniredis))
		})
	}
}

func TestRealRequiredReadsEnvironment(t *testing.T) {
	t.Setenv(RequireRedisEnv, "1")
	assert.True(t, realRequired())
	t.Setenv(RequireRedisEnv, "")
	assert.False(t, realRequired())
}

func TestMiniredisFallback(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{Miniredis: true})
	require.False(t, s.IsReal())
	require.NotNil(t, s.Miniredis())
	assert.Equal(t, s.Miniredis().Addr(), s.Addr())
	assert.Zero(t, s.PID())
	assert.Empty(t, s.Dir())
	assert.Empty(t, s.LogTail(10))

	assert.Equal(t, "OK", s.Do(t, "SET", "k", "v", "PX", "1000"))
	s.Miniredis().FastForward(2 * time.Second)
	assert.Equal(t, "(nil)", s.Do(t, "GET", "k"))
}

func TestMiniredisSkipsProcessMethods(t *testing.T) {
	t.Parallel()
	methods := []struct {
		name string
		call func(t *testing.T, s *Server)
	}{
		{name: "Kill9", call: func(t *testing.T, s *Server) { s.Kill9() }},
		{name: "Stop", call: func(t *testing.T, s *Server) { s.Stop() }},
		{name: "Cont", call: func(t *testing.T, s *Server) { s.Cont() }},
		{name: "Shutdown", call: func(t *testing.T, s *Server) { s.Shutdown() }},
		{name: "Restart", call: func(t *testing.T, s *Server) { s.Restart(t) }},
		{name: "Wipe", call: func(t *testing.T, s *Server) { s.Wipe() }},
	}
	for _, method := range methods {
		var skipped, returned bool
		t.Run(method.name, func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			method.call(t, Start(t, Options{Miniredis: true}))
			returned = true
		})
		assert.True(t, skipped, "%s must skip on miniredis", method.name)
		assert.False(t, returned, "%s must not return on miniredis", method.name)
	}

	var skipped bool
	t.Run("ACL users", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Start(t, Options{Miniredis: true, ACLUsers: []string{"locker on >pw"}})
	})
	assert.True(t, skipped, "ACL rules must skip on miniredis")
}
