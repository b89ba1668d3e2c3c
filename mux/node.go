package mux

import (
	"context"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/mux/internal/cluster"
)

// node is one of a Group's N independent nodes: one server, reached
// by a conn.Conn, or a Redis Cluster, whose slots are on many servers
// (cluster.Cluster). A round sends its command once to each node; the node
// takes it to the server that must answer.
type node interface {
	Address() string
	Username() string
	FsyncAlways() bool
	ServedBySentinel() bool
	AskSentinels(ctx context.Context) []SentinelReport
	Connected() bool
	Connect(ctx context.Context) error
	Close() error

	// Send queues call on the server that must answer it and reports
	// whether it waits in a buffer for Flush.
	Send(call *conn.Call, deadline time.Time) (buffered bool)
	Flush()
	// Wait, Collect and Abandon are conn.Conn's, for a call sent with the
	// node's Send.
	Wait(ctx context.Context, call *conn.Call)
	Collect(call *conn.Call) bool
	Abandon(call *conn.Call)
}

var _ node = (*conn.Conn)(nil)

// newNode returns the node for address, configured with options;
// node is its place in the Group, for the OnConnect of options.
func newNode(node int, address string, options Options) (node, error) {
	parsed, err := conn.ParseAddress(address)
	if err != nil {
		return nil, err
	}
	if parsed.Cluster {
		return cluster.New(parsed, cluster.Options{
			Conn:           options.connOptions(node),
			DialTimeout:    options.DialTimeout,
			RequestTimeout: options.RequestTimeout,
		}), nil
	}
	return conn.New(address, options.connOptions(node))
}
