package inspect_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/inspect"
)

// startNodes starts n in-process servers for the examples and returns their
// addresses and a function that stops them. Real deployments give the
// addresses of independent Redis masters.
func startNodes(n int) ([]string, func()) {
	return trustednodes.Start(n)
}

// Look at a lock from outside its holder: who holds it, on how many nodes.
func ExampleInspector_Status() {
	addresses, stop := startNodes(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()
	m := client.NewMutex("jobs:nightly", redlock.MutexOptions{TTL: 10 * time.Second})
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}

	inspector, err := inspect.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer inspector.Close()
	status, err := inspector.Status(ctx, "jobs:nightly")
	if err != nil {
		panic(err)
	}
	// Lock returns once a quorum confirmed: the last node may not hold
	// the key yet, so the example prints whether a quorum holds it.
	fmt.Printf("locked: %v, on a quorum of the %d nodes: %v\n", status.Locked(), len(status.Nodes), status.Holders >= status.Need)
	fmt.Println("the holder is m:", status.Holder == m.Token()[:inspect.TokenPrefixLength])

	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}
	status, err = inspector.Status(ctx, "jobs:nightly")
	if err != nil {
		panic(err)
	}
	fmt.Println("locked after the unlock:", status.Locked())
	// Output:
	// locked: true, on a quorum of the 3 nodes: true
	// the holder is m: true
	// locked after the unlock: false
}

// Find the lock keys that have no TTL: each blocks its lock on its node
// forever.
func ExampleInspector_Scan() {
	servers, stop := trustednodes.StartServers(1)
	defer stop()
	server := servers[0]
	server.Set("locks:stuck", "written by hand, without a TTL")
	client, err := redlock.New([]string{server.Addr()}, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()
	if err := client.NewMutex("locks:a", redlock.MutexOptions{TTL: 10 * time.Second}).Lock(ctx); err != nil {
		panic(err)
	}

	inspector, err := inspect.New([]string{server.Addr()}, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer inspector.Close()
	nodes, err := inspector.Scan(ctx, "locks:*")
	if err != nil {
		panic(err)
	}
	for _, node := range nodes {
		fmt.Printf("%d keys, %d without a TTL\n", len(node.Keys), len(node.Leaks()))
		for _, leak := range node.Leaks() {
			fmt.Println("leak:", leak.Key)
		}
	}
	// Output:
	// 2 keys, 1 without a TTL
	// leak: locks:stuck
}
