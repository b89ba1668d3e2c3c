package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/lockmux/lockmux/internal/floor"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/resp"
)

// addressesEnv names the environment variable that gives the benchmarks
// their servers: at least five comma-separated host:port addresses.
const addressesEnv = "LOCKMUX_BENCH_ADDRS"

// serverCount is how many servers the benchmarks need: the largest N.
const serverCount = 5

// nodeAddresses returns the addresses of the servers from addressesEnv, or
// starts serverCount redis-server processes for b. It skips b when neither
// is possible: timings against the in-process miniredis would mean nothing.
func nodeAddresses(b *testing.B) []string {
	b.Helper()
	if list := os.Getenv(addressesEnv); list != "" {
		addresses := strings.Split(list, ",")
		if len(addresses) < serverCount {
			b.Fatalf("%s holds %d addresses; the benchmarks need %d", addressesEnv, len(addresses), serverCount)
		}
		return addresses[:serverCount]
	}
	if !redistest.Available() {
		b.Skipf("redis-server is not installed and %s is not set", addressesEnv)
	}
	addresses := make([]string, serverCount)
	for i, server := range redistest.StartN(b, serverCount, redistest.Options{}) {
		if !server.IsReal() {
			b.Skip("redistest started miniredis instead of redis-server")
		}
		addresses[i] = server.Addr()
	}
	return addresses
}

// flushAll removes every key from every server, so that no key left by an
// earlier sub-benchmark holds a lock.
func flushAll(b *testing.B, addresses []string) {
	b.Helper()
	client, err := floor.Dial(addresses)
	if err != nil {
		b.Fatalf("flush: %v", err)
	}
	defer client.Close()
	if err := client.RoundTrip(resp.AppendCommand(nil, "FLUSHALL")); err != nil {
		b.Fatalf("flush: %v", err)
	}
	for i, reply := range client.Replies {
		if reply != '+' {
			b.Fatalf("flush %s: reply type %q", addresses[i], reply)
		}
	}
	// The flush lost nothing that any lock still needs: the servers are
	// stated new again, so that lockmux's quarantine lets them vote.
	if err := trustednodes.Trust(context.Background(), addresses, redlock.Options{}); err != nil {
		b.Fatalf("trust: %v", err)
	}
}

// forEachPeer runs body as one sub-benchmark per peer that include accepts
// (every peer when include is nil), named peer=NAME/N=NODES. The peer's
// locker is opened on the sub-benchmark's first run and kept for the runs
// that follow with a larger b.N, so that its connections are warm.
func forEachPeer(b *testing.B, include func(peer) bool, body func(b *testing.B, l locker)) {
	addresses := nodeAddresses(b)
	for _, p := range peers {
		if include == nil || include(p) {
			runPeer(b, p, addresses, body)
		}
	}
}

// runPeer runs body as the sub-benchmark of one peer.
func runPeer(b *testing.B, p peer, addresses []string, body func(b *testing.B, l locker)) {
	var l locker
	defer func() {
		if l != nil {
			l.close()
		}
	}()
	b.Run(fmt.Sprintf("peer=%s/N=%d", p.name, p.nodes), func(b *testing.B) {
		flushAll(b, addresses)
		if l == nil {
			var err error
			if l, err = p.open(addresses[:p.nodes]); err != nil {
				b.Fatalf("open %s: %v", p.name, err)
			}
		}
		body(b, l)
	})
}

// newSessions returns count sessions, session i on keyOf(i), each warmed
// up by one lock cycle, one after the other, so that connections are dialed
// and scripts loaded before timing starts. They are closed when b ends.
func newSessions(b *testing.B, l locker, count int, keyOf func(i int) string) []session {
	b.Helper()
	sessions := make([]session, count)
	for i := range sessions {
		s, err := l.newSession(keyOf(i))
		if err != nil {
			b.Fatalf("new session: %v", err)
		}
		b.Cleanup(s.close)
		if err := cycle(b.Context(), s); err != nil {
			b.Fatalf("warm-up: %v", err)
		}
		sessions[i] = s
	}
	return sessions
}

// cycle takes the lock on a free key with one attempt and releases it.
func cycle(ctx context.Context, s session) error {
	acquired, err := s.tryLock(ctx)
	if err != nil {
		return err
	}
	if !acquired {
		return fmt.Errorf("the lock on a free key was not acquired")
	}
	return s.unlock(ctx)
}

// sameKey returns a keyOf function of newSessions that gives every session
// the same key.
func sameKey(key string) func(int) string {
	return func(int) string { return key }
}
