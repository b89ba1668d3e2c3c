package slogobserver_test

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/slogobserver"
)

// Log a Client's events through slog: a lost hold is a warning, a cycle
// that goes well is logged at Debug. (With one node, so that the output
// does not depend on which nodes a Lock had reached when it returned: it
// returns once a quorum confirmed.)
func Example() {
	servers, stop := trustednodes.StartServers(1)
	defer stop()
	server := servers[0]

	// Times, durations and errors (which name the node's port) vary from
	// run to run: this example leaves them out of its output.
	stable := func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == "error" || a.Value.Kind() == slog.KindDuration {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: stable}))
	client, err := redlock.New([]string{server.Addr()}, redlock.Options{NodeTimeout: time.Second, Observer: slogobserver.New(logger)})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	m := client.NewMutex("orders:1001", redlock.MutexOptions{TTL: 10 * time.Second})
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}

	// The node loses the key (it restarts without persistence): the next
	// extension finds the hold lost.
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	server.FlushAll()
	m.Extend(ctx)
	// Output:
	// level=DEBUG msg="lock acquired" key=orders:1001 attempt=1 got=1 need=1
	// level=DEBUG msg="lock released" key=orders:1001 got=1 need=1
	// level=DEBUG msg="lock acquired" key=orders:1001 attempt=1 got=1 need=1
	// level=WARN msg="lock lost" key=orders:1001
	// level=INFO msg="lock extension failed" key=orders:1001 automatic=false got=0 need=1
}
