package redlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/redlock"
)

// A fair lock serves its waiters in the order they came.
func ExampleMutexOptions_fair() {
	addresses, stop := startNodes(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	m := client.NewMutex("printer", redlock.MutexOptions{TTL: 10 * time.Second, Fair: true})
	if err := m.Lock(ctx); err != nil { // uncontended: one round, as without Fair
		panic(err)
	}
	fmt.Println("printing")
	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}
	// Output:
	// printing
}
