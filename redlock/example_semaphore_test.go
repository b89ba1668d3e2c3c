package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/redlock"
)

// At most two holders at once, across three nodes: the third waits for a
// permit to be released.
func ExampleSemaphore() {
	addresses, stop := startNodes(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	exports := client.NewSemaphore("exports", 2, redlock.MutexOptions{TTL: 10 * time.Second})
	first, err := exports.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	second, err := exports.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	_, err = exports.TryAcquire(ctx)
	fmt.Println("a third holder:", errors.Is(err, redlock.ErrNotAcquired))

	if err := first.Release(ctx); err != nil {
		fmt.Println("the permit was lost before its release:", err)
	}
	third, err := exports.TryAcquire(ctx)
	fmt.Println("once one is released:", err == nil, "in the slot released:", third.Slot() == first.Slot())
	second.Release(ctx)
	third.Release(ctx)
	// Output:
	// a third holder: true
	// once one is released: true in the slot released: true
}

// A job that needs two of a pool's four connections takes both or none;
// Available tells how many are free at the moment.
func ExampleSemaphore_TryAcquireMany() {
	addresses, stop := startNodes(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	pool := client.NewSemaphore("connections", 4, redlock.MutexOptions{TTL: 10 * time.Second})
	permits, err := pool.TryAcquireMany(ctx, 3)
	if err != nil {
		panic(err)
	}
	free, err := pool.Available(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("free:", free)
	_, err = pool.TryAcquireMany(ctx, 2)
	fmt.Println("two more:", errors.Is(err, redlock.ErrNotAcquired))
	free, _ = pool.Available(ctx)
	fmt.Println("free after the attempt:", free)
	for _, permit := range permits {
		permit.Release(ctx)
	}
	// Output:
	// free: 1
	// two more: true
	// free after the attempt: 1
}
