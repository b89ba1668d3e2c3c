// Package redistest starts Redis servers for lockmux's tests. It is imported
// by tests only.
//
// Start runs a real redis-server process on a free loopback port, in a
// temporary directory of its own, with persistence, passwords, ACL users,
// TLS and extra flags chosen through Options, and stops it when the test
// ends. A Server can be killed (Kill9), paused (Stop, Cont), shut down,
// wiped and restarted on the same port, which is what the fault scenarios
// of lockmux need. Do sends one command over a fresh connection, to set up
// or inspect state without any client of the project.
//
// When redis-server is not on the PATH, Start falls back to an in-process
// miniredis server with the same Addr; methods that need a real process
// (Kill9, Stop, Cont, Shutdown, Restart, Wipe) then skip the test, and so
// does RequireReal. Setting LOCKMUX_REQUIRE_REDIS=1 turns a missing
// redis-server into a test failure instead, so that CI cannot pass by
// skipping.
//
// NewFake starts a scripted server that answers each command with whatever
// bytes a handler returns, for handshake and hostile-server tests.
//
// Servers listen on 127.0.0.1 only. The processes are started with their
// own process group and a parent-death signal (on Linux), so they die with
// the test binary; only the processes this package started are ever
// signalled, by their pid.
//
// # Concurrency
//
// Server and Fake are safe for concurrent use. The methods of Server that
// take no testing.TB report failures and skips on the test given to Start,
// so call them from that test's goroutine (or its subtests run serially);
// Restart and Do take the test to report on. A Fake's handler is called
// concurrently, one goroutine per connection. Every goroutine the package
// starts is waited for when the test ends.
//
// # Errors
//
// The helpers do not return errors: they fail the test with t.Fatalf, and
// include redis-server's output and the tail of its log when a server does
// not start. Errors the server sends are not failures: Do returns them as
// text starting with "-". A client that sends a Fake something other than
// arrays of bulk strings fails the test with t.Errorf.
package redistest
