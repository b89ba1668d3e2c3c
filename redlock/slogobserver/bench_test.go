package slogobserver_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/slogobserver"
)

// BenchmarkCycle measures what the observer costs a Lock+Unlock cycle on
// three nodes, against no observer, in one run:
//
//	go test -run '^$' -bench Cycle -benchmem ./redlock/slogobserver/
func BenchmarkCycle(b *testing.B) {
	addresses := startNodes(b, 3)
	logger := func(level slog.Level) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: level}))
	}
	observers := []struct {
		name     string
		observer redlock.Observer
	}{
		{name: "none"},
		{name: "slog/info", observer: slogobserver.New(logger(slog.LevelInfo))},
		{name: "slog/debug", observer: slogobserver.New(logger(slog.LevelDebug))},
	}
	for _, o := range observers {
		b.Run(o.name, func(b *testing.B) {
			b.ReportAllocs()
			// A generous node timeout: a busy machine must not fail a round.
			client, err := redlock.New(addresses, redlock.Options{NodeTimeout: 5 * time.Second, Observer: o.observer})
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			ctx := context.Background()
			m := client.NewMutex("bench:"+o.name, redlock.MutexOptions{})
			for b.Loop() {
				if err := m.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				if err := m.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
