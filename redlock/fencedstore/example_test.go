package fencedstore_test

import (
	"context"
	"fmt"

	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/fencedstore"
)

// Two holders of one lock write the same key: the one with the older
// fence, which lost the lock while it was paused, is refused. The fences
// here are written by hand; a holder takes its own from Mutex.Fence, with
// MutexOptions.Fencing.
func ExampleStore_Set() {
	servers, stop := trustednodes.StartServers(1)
	defer stop()
	server := servers[0]

	store, err := fencedstore.New(server.Addr(), redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	ctx := context.Background()
	applied, newest, err := store.Set(ctx, "balance", []byte("120"), 34) // the newer holder
	if err != nil {
		panic(err)
	}
	fmt.Println("fence 34 applied:", applied, "newest:", newest)
	applied, newest, err = store.Set(ctx, "balance", []byte("100"), 33) // the holder that lost the lock
	if err != nil {
		panic(err)
	}
	fmt.Println("fence 33 applied:", applied, "newest:", newest)
	// Output:
	// fence 34 applied: true newest: 34
	// fence 33 applied: false newest: 34
}
