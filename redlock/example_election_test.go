package redlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockmux/lockmux/redlock"
)

// Elect a leader: Campaign waits until this candidate leads, Leader tells
// every process who leads, and Resign lets the next candidate lead.
func ExampleElection() {
	addresses, stop := startNodes(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	election := client.NewElection("scheduler", redlock.ElectionOptions{})
	leadership, err := election.Campaign(ctx, "host-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("leading as", leadership.Value(), "in term", leadership.Term())

	leader, err := election.Leader(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("the nodes say:", leader.Value, "leads in term", leader.Term)

	if err := leadership.Resign(ctx); err != nil {
		panic(err)
	}
	_, err = election.Leader(ctx)
	fmt.Println("after Resign, no leader:", errors.Is(err, redlock.ErrNoLeader))
	// Output:
	// leading as host-1 in term 1
	// the nodes say: host-1 leads in term 1
	// after Resign, no leader: true
}

// Run calls the function while this candidate leads, and campaigns again
// when the leadership is lost; it returns when the function returns while
// leading.
func ExampleElection_Run() {
	addresses, stop := startNodes(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	election := client.NewElection("scheduler", redlock.ElectionOptions{})
	err = election.Run(context.Background(), "host-1", func(ctx context.Context, l *redlock.Leadership) error {
		// Schedule jobs until ctx ends; stamp each with l.Term().
		fmt.Println("leading in term", l.Term())
		return nil
	})
	fmt.Println("resigned:", err)
	// Output:
	// leading in term 1
	// resigned: <nil>
}

// Observe delivers the leader, then each new one, until ctx ends.
func ExampleElection_Observe() {
	addresses, stop := startNodes(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	election := client.NewElection("scheduler", redlock.ElectionOptions{})
	if _, err := election.Campaign(context.Background(), "host-1"); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for leader := range election.Observe(ctx) {
		fmt.Println(leader.Value, "leads in term", leader.Term)
		cancel() // one is enough here
	}
	// Output:
	// host-1 leads in term 1
}
