package redistest

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

// RequireRedisEnv is the environment variable that, set to "1", makes a
// missing redis-server binary a test failure instead of a reason to fall back
// to miniredis or to skip. CI sets it.
const RequireRedisEnv = "LOCKMUX_REQUIRE_REDIS"

// binaryName is the program Start looks for on the PATH.
const binaryName = "redis-server"

// backend is what Start runs for a test.
type backend int

const (
	// backendReal runs a redis-server process.
	backendReal backend = iota
	// backendMiniredis runs an in-process miniredis server.
	backendMiniredis
	// backendMissing means a real server is required and none is installed:
	// the test fails.
	backendMissing
)

// lookupBinary finds redis-server on the PATH once per test binary.
var lookupBinary = sync.OnceValues(func() (string, error) {
	return exec.LookPath(binaryName)
})

// Available reports whether a redis-server binary is on the PATH.
func Available() bool {
	_, err := lookupBinary()
	return err == nil
}

// realRequired reports whether the environment demands real servers.
func realRequired() bool {
	return os.Getenv(RequireRedisEnv) == "1"
}

// chooseBackend decides what Start runs. It takes the facts as arguments so
// that its rules can be tested without removing the binary: an explicit
// request for miniredis wins; otherwise a present binary is used; a missing
// one means miniredis, unless real servers are required.
func chooseBackend(haveBinary, requireReal, wantMiniredis bool) backend {
	switch {
	case wantMiniredis:
		return backendMiniredis
	case haveBinary:
		return backendReal
	case requireReal:
		return backendMissing
	default:
		return backendMiniredis
	}
}

// missingMessage explains a failure or skip caused by a missing binary.
const missingMessage = "redistest: redis-server is not on the PATH"

// RequireReal skips the test when redis-server is not on the PATH, for tests
// that only make sense against real server processes. When
// LOCKMUX_REQUIRE_REDIS=1 is set, a missing binary fails the test instead.
func RequireReal(t testing.TB) {
	t.Helper()
	switch chooseBackend(Available(), realRequired(), false) {
	case backendMissing:
		t.Fatalf("%s and %s=1 requires it (install redis-server)", missingMessage, RequireRedisEnv)
	case backendMiniredis:
		t.Skipf("%s; this test needs a real server", missingMessage)
	}
}
