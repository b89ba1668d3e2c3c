package cluster

import "errors"

var (
	// ErrRedirectLoop is matched by the outcome of a command that a Redis
	// Cluster redirected more than maxRedirects times: its slot
	// moves faster than the cluster answers. The command was not applied.
	ErrRedirectLoop = errors.New("mux: too many cluster redirects")

	// ErrClusterMap is matched by the error of a Redis Cluster whose
	// slot map could not be read from any of its nodes, or says that some
	// slot has no master.
	ErrClusterMap = errors.New("mux: cannot read the cluster's slot map")
)
