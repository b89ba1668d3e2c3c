package redistest

import (
	"fmt"
	"net"
	"testing"
)

// loopbackHost is the only address the servers of this package listen on.
const loopbackHost = "127.0.0.1"

// maxPortAttempts is how many free ports Start tries before it gives up on
// a server that keeps finding its port taken.
const maxPortAttempts = 5

// freePort asks the kernel for a port that is free on the loopback address
// at this moment. Another process may take it before redis-server binds it;
// Start detects that from the server's log and tries another port.
func freePort() (int, error) {
	listener, err := net.Listen("tcp", net.JoinHostPort(loopbackHost, "0"))
	if err != nil {
		return 0, fmt.Errorf("redistest: find a free port: %w", err)
	}
	port := listener.Addr().(*net.TCPAddr).Port
	if err := listener.Close(); err != nil {
		return 0, fmt.Errorf("redistest: find a free port: %w", err)
	}
	return port, nil
}

// hostPort returns "127.0.0.1:port".
func hostPort(port int) string {
	return net.JoinHostPort(loopbackHost, fmt.Sprint(port))
}

// ClosedAddress returns a loopback "host:port" where nothing listens, for
// a test of a node that is down: a port that was free a moment ago.
func ClosedAddress(t testing.TB) string {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return hostPort(port)
}
