package trustednodes

import (
	"context"

	"github.com/alicebob/miniredis/v2"

	"github.com/lockmux/lockmux/internal/miniinfo"
	"github.com/lockmux/lockmux/redlock"
)

// Start starts n servers and returns their addresses and a function that
// stops them. It panics when a server cannot start, as an example would.
func Start(n int) ([]string, func()) {
	servers, stop := StartServers(n)
	addresses := make([]string, n)
	for i, server := range servers {
		addresses[i] = server.Addr()
	}
	return addresses, stop
}

// StartServers is Start for the examples that write to a server by hand.
func StartServers(n int) ([]*miniredis.Miniredis, func()) {
	servers := make([]*miniredis.Miniredis, n)
	addresses := make([]string, n)
	for i := range servers {
		servers[i] = miniredis.NewMiniRedis()
		if err := servers[i].Start(); err != nil {
			panic(err)
		}
		miniinfo.Install(servers[i])
		addresses[i] = servers[i].Addr()
	}
	stop := func() {
		for _, server := range servers {
			server.Close()
		}
	}
	if err := Trust(context.Background(), addresses, redlock.Options{}); err != nil {
		stop()
		panic(err)
	}
	return servers, stop
}

// Trust states the nodes at addresses new, with a Client of options.
func Trust(ctx context.Context, addresses []string, options redlock.Options) error {
	client, err := redlock.New(addresses, options)
	if err != nil {
		return err
	}
	defer client.Close()
	return client.TrustNodes(ctx)
}
