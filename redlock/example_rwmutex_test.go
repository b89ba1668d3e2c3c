package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/redlock"
)

// Readers share a read/write lock; a writer waits for them, and new
// readers wait for the writer.
func ExampleRWMutex() {
	addresses, stop := startNodes(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	options := redlock.MutexOptions{TTL: 10 * time.Second}
	reader, other := client.NewRWMutex("catalog", options), client.NewRWMutex("catalog", options)
	if err := reader.RLock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("a second reader:", other.TryRLock(ctx) == nil)
	fmt.Println("upgrading a read hold refused:", errors.Is(other.TryLock(ctx), redlock.ErrWouldDeadlock))

	writer := client.NewRWMutex("catalog", options)
	fmt.Println("a writer while they read:", errors.Is(writer.TryLock(ctx), redlock.ErrNotAcquired))
	reader.RUnlock(ctx)
	other.RUnlock(ctx)
	if err := writer.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("the writer, once the readers left")
	writer.Unlock(ctx)
	// Output:
	// a second reader: true
	// upgrading a read hold refused: true
	// a writer while they read: true
	// the writer, once the readers left
}
