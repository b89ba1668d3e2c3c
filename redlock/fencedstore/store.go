package fencedstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/internal/decimal"
	"github.com/lockmux/lockmux/redlock/internal/transport"
	"github.com/lockmux/lockmux/resp"
)

// fencedSetScript writes a value only if the writer's fence is not older
// than the newest fence applied to the key.
//
//go:embed fenced_set.lua
var fencedSetScript string

// fencedSetLua is fencedSetScript after the decimal prelude, loaded by
// the Store's connection.
var fencedSetLua = mux.NewScript(decimal.Lua + fencedSetScript)

// fenceSuffix ends the key that keeps the newest fence applied to a key of
// a Store.
const fenceSuffix = ":fence"

// Store applies writes to a Redis server only if their fence is not older
// than the newest fence applied to the same key.
//
// A Store is safe for concurrent use. Close it when done.
type Store struct {
	group *mux.Group // of one node
}

// New returns a Store over the Redis server at address, in the forms
// redlock.New accepts. Of options, the credentials, TLS configuration,
// dial timeout, client name and protocol apply; the other fields configure
// locks and are ignored. New does not dial: the server is dialled when
// first used.
func New(address string, options redlock.Options) (*Store, error) {
	group, err := transport.NewGroup([]string{address}, options, fencedSetLua)
	if err != nil {
		return nil, fmt.Errorf("fencedstore: %w", err)
	}
	return &Store{group: group}, nil
}

// Set writes value to key if fence is at least the newest fence applied
// to key (kept in key + ":fence"). It reports whether the value was
// written, and the newest fence after the call: fence itself, or the newer
// one that refused the write. Fences are compared exactly, over the whole
// range of int64; a negative fence is an error, and so is a newest fence
// that is not a decimal integer from 0 to 2^63−1 (matching
// redlock.ErrFenceCounter).
func (s *Store) Set(ctx context.Context, key string, value []byte, fence int64) (applied bool, newest int64, err error) {
	if fence < 0 {
		return false, 0, fmt.Errorf("fencedstore: set %q: negative fence %d", key, fence)
	}
	var request mux.Request
	request.SetScript(fencedSetLua, 2, 2)
	request.AppendString(key)
	request.AppendString(key + fenceSuffix)
	request.AppendBulk(value)
	request.AppendInt(fence)
	err = s.group.Do(ctx, 0, &request)
	if err == nil {
		err = request.Err()
	}
	if err != nil {
		return false, 0, fmt.Errorf("fencedstore: set %q: %w", key, err)
	}
	reply := request.Reply()
	if reply.IsError() {
		if string(resp.ErrorCode(reply.Str)) == fenceErrorCode {
			return false, 0, fmt.Errorf("fencedstore: set %q: %w: %w", key, redlock.ErrFenceCounter, reply.Err())
		}
		return false, 0, fmt.Errorf("fencedstore: set %q: %w", key, reply.Err())
	}
	if len(reply.Elems) == 2 && reply.Elems[0].Type == resp.TypeInteger && reply.Elems[1].Type == resp.TypeBulkString {
		if newest, ok := parseFence(reply.Elems[1].Str); ok {
			return reply.Elems[0].Int == 1, newest, nil
		}
	}
	return false, 0, fmt.Errorf("fencedstore: set %q: %w: %s", key, errUnexpectedReply, reply)
}

// fenceErrorCode is the code of fenced_set.lua's error reply for a fence
// that is not a decimal integer in its range.
const fenceErrorCode = "FENCE"

// parseFence parses a fence as fenced_set.lua returns it: a decimal
// integer without sign or leading zeros, from 0 to math.MaxInt64.
func parseFence(text []byte) (int64, bool) {
	if len(text) == 0 || (len(text) > 1 && text[0] == '0') {
		return 0, false
	}
	for _, digit := range text {
		if digit < '0' || digit > '9' {
			return 0, false
		}
	}
	fence, err := strconv.ParseInt(string(text), 10, 64)
	return fence, err == nil
}

// Close closes the connection.
func (s *Store) Close() error {
	return s.group.Close()
}
