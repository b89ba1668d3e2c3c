package fencedstore

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/internal/transport"
	"github.com/lockmux/lockmux/resp"
)

// fencedSetScript writes a value only if the writer's fence is not older
// than the newest fence applied to the key.
//
//go:embed fenced_set.lua
var fencedSetScript string

// fencedSetLua is fencedSetScript, loaded by the Store's connection.
var fencedSetLua = mux.NewScript(fencedSetScript)

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
// one that refused the write.
func (s *Store) Set(ctx context.Context, key string, value []byte, fence int64) (applied bool, newest int64, err error) {
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
		return false, 0, fmt.Errorf("fencedstore: set %q: %w", key, reply.Err())
	}
	if len(reply.Elems) != 2 || reply.Elems[0].Type != resp.TypeInteger || reply.Elems[1].Type != resp.TypeInteger {
		return false, 0, fmt.Errorf("fencedstore: set %q: %w: %s", key, errUnexpectedReply, reply)
	}
	return reply.Elems[0].Int == 1, reply.Elems[1].Int, nil
}

// Close closes the connection.
func (s *Store) Close() error {
	return s.group.Close()
}
