package mux

import (
	"errors"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/mux/internal/cluster"
)

var (
	// ErrNoNodes is returned by New for an empty address list.
	ErrNoNodes = errors.New("mux: no addresses")

	// ErrNotConnected is matched by the outcome of a command that was not
	// sent because its server's connection is down or being dialled again:
	// the server never saw it. It is conn's error, re-exported.
	ErrNotConnected = conn.ErrNotConnected

	// ErrAuth is matched when a server rejected the credentials or the
	// permissions of the connection (NOAUTH, WRONGPASS, NOPERM at the
	// handshake): retrying does not help. It is conn's error, re-exported.
	ErrAuth = conn.ErrAuth

	// ErrPushUnavailable is matched by the error given to
	// SubscribeOptions.OnUnavailable: the server cannot carry push commands
	// (it speaks only RESP2, Options.Protocol is ProtocolRESP2, or it
	// refused a push command, as an ACL without channel rights does).
	ErrPushUnavailable = errors.New("mux: server cannot carry subscriptions")

	// ErrTrackingUnavailable is matched by the error given to
	// SubscribeOptions.OnTrackingUnavailable, and returned by
	// Subscriber.Track, for a server whose subscription connection cannot
	// track keys: it cannot carry subscriptions (ErrPushUnavailable), or it
	// refused CLIENT TRACKING, as an ACL without the client|tracking
	// command does; also by Track when SubscribeOptions.OnInvalidate is
	// nil.
	ErrTrackingUnavailable = errors.New("mux: server cannot track keys")

	// ErrMalformedPush is matched by the error that ends a subscription
	// connection on which an invalidation push did not have the form
	// Redis gives it (Invalidation.Err): the connection is closed, as
	// after any protocol error.
	ErrMalformedPush = errors.New("mux: malformed push")

	// ErrUnfinished is matched by the error of Close when carried commands
	// could not be finished (see Round.Carry). It is conn's error,
	// re-exported.
	ErrUnfinished = conn.ErrUnfinished

	// ErrNotFollowed is matched by the error of Round.FollowUpReply when
	// a Redis Cluster's redirect or TRYAGAIN sent the round's command again
	// without its follow-up (to a master the slot map does not know): the
	// follow-up's reply tells nothing of the master that answered.
	ErrNotFollowed = errors.New("mux: the command was sent again without its follow-up (a redirect or a TRYAGAIN)")

	// ErrRedirectLoop is matched by the outcome of a command that a Redis
	// Cluster redirected more than 5 times: its slot moves faster
	// than the cluster answers. The command was not applied.
	ErrRedirectLoop = cluster.ErrRedirectLoop

	// ErrClusterMap is matched by the error of a Redis Cluster whose
	// slot map could not be read from any of its nodes, or says that some
	// slot has no master.
	ErrClusterMap = cluster.ErrClusterMap
)

// ParseAddress checks an address in the forms New accepts ("host:port",
// "redis://[user:password@]host:port[/db]", "rediss://…", "unix:///path",
// "redis-sentinel://…" for a master that Redis Sentinel serves, and
// "redis-cluster://…" for a Redis Cluster, see conn.ParseAddress) and
// returns it without its password, as Group.Address names it.
func ParseAddress(address string) (string, error) {
	parsed, err := conn.ParseAddress(address)
	if err != nil {
		return "", err
	}
	return parsed.String(), nil
}

// ServedBySentinel reports whether address, in a form ParseAddress
// accepts, names a master that Redis Sentinel serves; false for an address
// that does not parse.
func ServedBySentinel(address string) bool {
	parsed, err := conn.ParseAddress(address)
	return err == nil && parsed.MasterName != ""
}

// IsCluster reports whether address, in a form ParseAddress accepts, names
// a Redis Cluster; false for an address that does not parse.
func IsCluster(address string) bool {
	parsed, err := conn.ParseAddress(address)
	return err == nil && parsed.Cluster
}
