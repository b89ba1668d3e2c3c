package otel

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockmux/lockmux/redlock"
)

// eventNode is the name of the span event of one node's part in a failed
// operation.
const eventNode = "lockmux.node"

// fail marks span, which started at start, as failed with err: the status
// Error, the attribute error.type, and when err is a *redlock.QuorumError,
// an event per node. The status description is the error's message when
// keys are recorded (it names the key), otherwise the error.type.
func (o *Observer) fail(span trace.Span, start time.Time, err error) {
	kind := errorType(err)
	span.SetAttributes(semconv.ErrorTypeKey.String(kind))
	description := kind
	if o.recordKeys {
		description = err.Error()
	}
	span.SetStatus(codes.Error, description)
	var quorum *redlock.QuorumError
	if !errors.As(err, &quorum) {
		return
	}
	for i := range quorum.Nodes {
		node := &quorum.Nodes[i]
		span.AddEvent(eventNode, trace.WithTimestamp(start.Add(node.Latency)), trace.WithAttributes(nodeAttributes(node)...))
	}
}

// nodeAttributes returns the attributes of a node's event: its address and
// port, its outcome, its latency in seconds and its error if any.
func nodeAttributes(node *redlock.NodeResult) []attribute.KeyValue {
	attributes := make([]attribute.KeyValue, 0, 5)
	host, port, err := net.SplitHostPort(node.Address)
	if err != nil {
		attributes = append(attributes, semconv.ServerAddress(node.Address))
	} else {
		attributes = append(attributes, semconv.ServerAddress(host))
		if number, err := strconv.Atoi(port); err == nil {
			attributes = append(attributes, semconv.ServerPort(number))
		}
	}
	attributes = append(attributes, keyNodeOutcome.String(node.Outcome.String()), keyNodeLatency.Float64(node.Latency.Seconds()))
	if node.Err != nil {
		attributes = append(attributes, keyNodeError.String(node.Err.Error()))
	}
	return attributes
}

// errorType returns the error.type of a failed operation's error: a short
// name of its cause, from a set of a few, or "_OTHER".
func errorType(err error) string {
	switch {
	case errors.Is(err, redlock.ErrClosed):
		return "closed"
	case errors.Is(err, redlock.ErrQuorumUnreachable):
		return "quorum_unreachable"
	}
	// A QuorumError says what failed; its nodes' errors, which it unwraps
	// to, may match a context's errors without the operation's ctx having
	// ended.
	var quorum *redlock.QuorumError
	if errors.As(err, &quorum) && quorum == err {
		return failureOf(quorum.Operation)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, redlock.ErrNotAcquired):
		return "not_acquired"
	case errors.Is(err, redlock.ErrLockLost):
		return "lock_lost"
	case errors.Is(err, redlock.ErrDuplicateNode):
		return "duplicate_node"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// failureOf returns the error.type of a QuorumError of operation.
func failureOf(operation redlock.Operation) string {
	switch operation {
	case redlock.OperationLock, redlock.OperationResume:
		return "not_acquired"
	case redlock.OperationExtend, redlock.OperationUnlock:
		return "lock_lost"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}
