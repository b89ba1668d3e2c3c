package mux

import (
	"fmt"

	"github.com/lockmux/lockmux/resp"
)

// push handles a push frame of l, a subscription connection of server
// node: an
// invalidation when key tracking is on, any other push for
// SubscribeOptions.OnPush. It is called by the reader of the connection,
// one push at a time, in the order of the connection. A malformed
// invalidation is refused with an error matching ErrMalformedPush: the
// connection is closed, and the keys it armed are reported
// (InvalidatedDisconnected).
func (s *Subscriber) push(node int, l *link, push resp.Value) error {
	if s.options.OnInvalidate != nil && isInvalidation(push) {
		return s.invalidated(node, l, push)
	}
	if onPush := s.options.OnPush; onPush != nil {
		onPush(node, push)
	}
	return nil
}

// isInvalidation reports whether push is a key tracking invalidation:
// its first element is "invalidate".
func isInvalidation(push resp.Value) bool {
	if len(push.Elems) == 0 {
		return false
	}
	kind := push.Elems[0]
	return (kind.Type == resp.TypeBulkString || kind.Type == resp.TypeSimpleString) && string(kind.Str) == "invalidate"
}

// invalidated reports the armed keys that an invalidation push names, or
// every armed key of l for a flush (a null instead of the keys), and ends
// their arming.
func (s *Subscriber) invalidated(node int, l *link, push resp.Value) error {
	if err := checkInvalidation(push); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrMalformedPush, s.group.Address(node), err)
	}
	sub := s.nodes[node]
	keys := push.Elems[1]
	sub.mu.Lock()
	t := &l.tracking
	reported := l.reported[:0]
	if keys.Null {
		reported = t.armed.disarmAll(reported, node, InvalidatedFlush, nil)
	}
	for _, key := range keys.Elems {
		if armed, ok := t.armed.disarm(key.Str); ok {
			reported = append(reported, Invalidation{Node: node, Key: armed.key, Tag: armed.tag, Cause: InvalidatedKey})
		}
	}
	sub.mu.Unlock()
	for _, invalidation := range reported {
		s.options.OnInvalidate(invalidation)
	}
	clear(reported) // no key strings kept past the report
	l.reported = reported[:0]
	return nil
}

// checkInvalidation returns what is wrong with an invalidation push, or
// nil: it has the kind and one more element, a null (a flush) or an array
// of keys, each a bulk string.
func checkInvalidation(push resp.Value) error {
	if len(push.Elems) != 2 {
		return fmt.Errorf("invalidation push of %d elements, want 2", len(push.Elems))
	}
	keys := push.Elems[1]
	switch {
	case keys.Null:
		return nil
	case keys.Type != resp.TypeArray:
		return fmt.Errorf("invalidation push with a %s for its keys, want an array or a null", keys.Type)
	}
	for i, key := range keys.Elems {
		if key.Type != resp.TypeBulkString || key.Null {
			return fmt.Errorf("invalidation push with a %s for key %d, want a bulk string", key.Type, i)
		}
	}
	return nil
}
