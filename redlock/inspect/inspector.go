package inspect

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/internal/transport"
)

// timeout is how long the nodes have to answer the commands of a Status
// round; the context bounds how long its caller waits.
const timeout = 5 * time.Second

// Inspector reads the lock keys on the nodes of a deployment.
//
// An Inspector is safe for concurrent use. Close it when done.
type Inspector struct {
	group     *mux.Group
	addresses []string // as the connections name them, without passwords
	need      int      // the quorum: len(addresses)/2 + 1
	closed    atomic.Bool
}

// New returns an Inspector for the Redis masters at addresses, in the forms
// redlock.New accepts; they are named in its reports in this order. Of
// options, the credentials, TLS configuration, dial timeout, client name
// and protocol apply, as for a Client; the other fields configure locks and
// are ignored. New does not dial: the nodes are dialled when first used,
// and again after a failure. It fails for invalid options, no addresses,
// an address that cannot be parsed, and an address given twice, which
// would count twice in a quorum (two names of one server are not found
// out here: doctor.Run compares the servers' run_ids).
func New(addresses []string, options redlock.Options) (*Inspector, error) {
	group, err := transport.NewGroup(addresses, options)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	i := &Inspector{group: group, addresses: make([]string, group.Len()), need: group.Len()/2 + 1}
	for node := range i.addresses {
		i.addresses[node] = group.Address(node)
		for other := range node {
			if i.addresses[other] == i.addresses[node] {
				group.Close()
				return nil, fmt.Errorf("inspect: %w: %s is given twice", redlock.ErrDuplicateNode, i.addresses[node])
			}
		}
	}
	return i, nil
}

// Close closes the connections. Status and Scan return ErrClosed after
// Close.
func (i *Inspector) Close() error {
	if i.closed.Swap(true) {
		return nil
	}
	return i.group.Close()
}
