package mux

import (
	"context"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/mux/internal/cluster"
)

// member is one of a Group's N independent members: one server, reached
// by a conn.Conn, or a Redis Cluster, whose slots are on many servers
// (cluster.Cluster). A round sends its command once to each member; the member
// takes it to the server that must answer.
type member interface {
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
	// member's Send.
	Wait(ctx context.Context, call *conn.Call)
	Collect(call *conn.Call) bool
	Abandon(call *conn.Call)
}

var _ member = (*conn.Conn)(nil)

// newMember returns the member for address, configured with options;
// node is its place in the Group, for the OnConnect of options.
func newMember(node int, address string, options Options) (member, error) {
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
