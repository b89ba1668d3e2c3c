package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
)

// startNodes starts n in-process servers for the examples and returns their
// addresses and a function that stops them. Real deployments give the
// addresses of independent Redis masters.
func startNodes(n int) ([]string, func()) {
	return trustednodes.Start(n)
}

// Lock a resource across three nodes, work while holding it, unlock.
func Example() {
	addresses, stop := startNodes(3)
	defer stop()

	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	m := client.NewMutex("orders:1001", redlock.MutexOptions{TTL: 10 * time.Second})
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("locked; valid for about 10 s:", time.Until(m.Until()).Round(time.Second))
	if err := m.Unlock(ctx); err != nil {
		fmt.Println("the hold was lost before the unlock:", err)
	}
	fmt.Println("unlocked")
	// Output:
	// locked; valid for about 10 s: 10s
	// unlocked
}

// TryLock makes one attempt and reports a lock held elsewhere as
// ErrNotAcquired.
func ExampleMutex_TryLock() {
	addresses, stop := startNodes(3)
	defer stop()
	first, _ := redlock.New(addresses, redlock.Options{})
	defer first.Close()
	second, _ := redlock.New(addresses, redlock.Options{})
	defer second.Close()

	ctx := context.Background()
	holder := first.NewMutex("report", redlock.MutexOptions{})
	if err := holder.TryLock(ctx); err != nil {
		panic(err)
	}
	err := second.NewMutex("report", redlock.MutexOptions{}).TryLock(ctx)
	fmt.Println("second client acquired:", err == nil)
	fmt.Println("not acquired:", errors.Is(err, redlock.ErrNotAcquired))
	holder.Unlock(ctx)
	// Output:
	// second client acquired: false
	// not acquired: true
}

// Extend renews a hold for another TTL, measured from the extension.
func ExampleMutex_Extend() {
	addresses, stop := startNodes(3)
	defer stop()
	client, _ := redlock.New(addresses, redlock.Options{})
	defer client.Close()

	ctx := context.Background()
	m := client.NewMutex("batch", redlock.MutexOptions{TTL: 5 * time.Second})
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	before := m.Until()
	if err := m.Extend(ctx); err != nil {
		fmt.Println("lost:", errors.Is(err, redlock.ErrLockLost))
		return
	}
	fmt.Println("extended:", !m.Until().Before(before))
	m.Unlock(ctx)
	// Output:
	// extended: true
}

// A *QuorumError tells what each node answered. (With one node, so that
// the output does not depend on which nodes the holder's Lock had reached
// when it returned: it returns once a quorum confirmed.)
func ExampleQuorumError() {
	addresses, stop := startNodes(1)
	defer stop()
	first, _ := redlock.New(addresses, redlock.Options{})
	defer first.Close()
	second, _ := redlock.New(addresses, redlock.Options{})
	defer second.Close()

	ctx := context.Background()
	holder := first.NewMutex("invoice:7", redlock.MutexOptions{})
	if err := holder.Lock(ctx); err != nil {
		panic(err)
	}
	defer holder.Unlock(ctx)

	err := second.NewMutex("invoice:7", redlock.MutexOptions{}).TryLock(ctx)
	var quorumError *redlock.QuorumError
	if errors.As(err, &quorumError) {
		fmt.Printf("%d of %d nodes, need %d\n", quorumError.Got, len(quorumError.Nodes), quorumError.Need)
		for _, node := range quorumError.Nodes {
			fmt.Println(node.Outcome)
		}
	}
	// Output:
	// 0 of 1 nodes, need 1
	// held
}

// Run work while holding a lock: Do renews the hold while the function
// runs, cancels the function's context if the hold is lost, and releases
// the lock when the function returns, or panics.
func ExampleClient_Do() {
	addresses, stop := startNodes(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	err = client.Do(ctx, "report", redlock.MutexOptions{TTL: 5 * time.Second}, func(ctx context.Context) error {
		// ctx is cancelled, with a cause matching redlock.ErrLockLost, if
		// the hold is lost.
		fmt.Println("building the report; lock lost:", ctx.Err() != nil)
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// building the report; lock lost: false
	// done: <nil>
}

// Fencing tokens: each hold of a resource gets a larger fence, across
// clients; pass it with every write and have the resource refuse older
// ones (package fencedstore does that for a Redis key).
func ExampleMutexOptions_fencing() {
	addresses, stop := startNodes(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	m := client.NewMutex("ledger", redlock.MutexOptions{Fencing: true})
	var fences []int64
	for range 2 {
		if err := m.Lock(ctx); err != nil {
			panic(err)
		}
		fences = append(fences, m.Fence()) // read while the hold lasts
		if err := m.Unlock(ctx); err != nil {
			panic(err)
		}
	}
	fmt.Println("fences:", fences, "increasing:", fences[1] > fences[0])
	// Output:
	// fences: [1 2] increasing: true
}
