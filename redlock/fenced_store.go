package redlock

import (
	"context"
	"fmt"
	"math"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/resp"
)

// fenceStoreSuffix ends the key that keeps the newest fence applied to a
// key of a FencedStore.
const fenceStoreSuffix = ":fence"

// FencedStore is the storage side of fencing for a resource kept in Redis:
// it applies a write only if the writer's fence is not older than the
// newest fence already applied to that key, so that a holder who lost its
// lock (a pause, a partition) cannot overwrite the work of the next one.
// The check and the write are one script, atomic on the server.
//
// For a SQL database the same rule is one statement:
//
//	UPDATE resource SET value = $2, last_fence = $1 WHERE id = $3 AND last_fence <= $1
//
// and zero rows updated means the write was refused.
//
// A FencedStore is safe for concurrent use.
type FencedStore struct {
	group *mux.Group // of one node
}

// NewFencedStore returns a FencedStore over the Redis server at address,
// in the forms New accepts. Of options, the credentials, TLS, timeouts and
// protocol apply.
func NewFencedStore(address string, options Options) (*FencedStore, error) {
	options, err := options.withDefaults()
	if err != nil {
		return nil, err
	}
	groupOptions := options.groupOptions()
	groupOptions.Scripts = []*mux.Script{fencedSetLua}
	group, err := mux.New([]string{address}, groupOptions)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return &FencedStore{group: group}, nil
}

// Set writes value to key if fence is at least the newest fence applied
// to key (kept in key + ":fence"). It reports whether the value was
// written, and the newest fence after the call: fence itself, or the newer
// one that refused the write. Fences are compared exactly, over the whole
// range of int64; a negative fence is an error, and so is a newest fence
// that is not a decimal integer from 0 to 2^63−1 (matching
// ErrFenceCounter).
func (s *FencedStore) Set(ctx context.Context, key string, value []byte, fence int64) (applied bool, newest int64, err error) {
	if fence < 0 {
		return false, 0, fmt.Errorf("redlock: fenced set %q: negative fence %d", key, fence)
	}
	var request mux.Request
	request.SetScript(fencedSetLua, 2, 2)
	request.AppendString(key)
	request.AppendString(key + fenceStoreSuffix)
	request.AppendBulk(value)
	request.AppendInt(fence)
	err = s.group.Do(ctx, 0, &request)
	if err == nil {
		err = request.Err()
	}
	if err != nil {
		return false, 0, fmt.Errorf("redlock: fenced set %q: %w", key, err)
	}
	reply := request.Reply()
	if reply.IsError() {
		if string(resp.ErrorCode(reply.Str)) == fenceErrorCode {
			return false, 0, fmt.Errorf("redlock: fenced set %q: %w: %w", key, ErrFenceCounter, reply.Err())
		}
		return false, 0, fmt.Errorf("redlock: fenced set %q: %w", key, reply.Err())
	}
	if len(reply.Elems) == 2 && reply.Elems[0].Type == resp.TypeInteger && reply.Elems[1].Type == resp.TypeBulkString {
		if newest, ok := parseFence(reply.Elems[1].Str); ok {
			return reply.Elems[0].Int == 1, newest, nil
		}
	}
	return false, 0, fmt.Errorf("redlock: fenced set %q: %w: %s", key, errUnexpectedReply, reply)
}

// parseFence parses a fence as fencedSetScript returns it: a decimal
// integer without sign or leading zeros, from 0 to math.MaxInt64.
func parseFence(text []byte) (int64, bool) {
	if string(text) == "9223372036854775807" {
		return math.MaxInt64, true
	}
	return parseCounter(text)
}

// Close closes the connection.
func (s *FencedStore) Close() error {
	return s.group.Close()
}
