package bench

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/internal/floor"
	"github.com/lockmux/lockmux/resp"
)

// releaseScript is the compare-and-delete script of the floor and the
// go-redis peer: delete the key if it still holds the caller's token.
const releaseScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`

// floorDriftFactor and floorDriftFixed make the clock-drift allowance of the
// floor's validity check, the same as lockmux's defaults.
const (
	floorDriftFactor = 0.01
	floorDriftFixed  = 2 * time.Millisecond
)

// floorLocker is the hand-written minimal Redlock client: it only knows the
// addresses and the release script's SHA1, loaded on every node at setup.
type floorLocker struct {
	addresses []string
	scriptSHA string
}

// openFloor loads the release script on every node.
func openFloor(addresses []string) (locker, error) {
	sum := sha1.Sum([]byte(releaseScript))
	l := &floorLocker{addresses: addresses, scriptSHA: hex.EncodeToString(sum[:])}
	client, err := floor.Dial(addresses)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	defer client.Close()
	if err := client.RoundTrip(resp.AppendCommand(nil, "SCRIPT", "LOAD", releaseScript)); err != nil {
		return nil, fmt.Errorf("floor: script load: %w", err)
	}
	for i, reply := range client.Replies {
		if reply != '$' {
			return nil, fmt.Errorf("floor: script load on %s: reply type %q", addresses[i], reply)
		}
	}
	return l, nil
}

// newSession dials one connection to every node for this session alone.
func (l *floorLocker) newSession(key string) (session, error) {
	client, err := floor.Dial(l.addresses)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	return &floorSession{locker: l, client: client, key: key, command: make([]byte, 0, 256)}, nil
}

func (l *floorLocker) close() {}

// floorSession locks one key over its own connections. Its command buffer
// and token are reused, so a cycle does not allocate. It ignores ctx: the
// floor has no deadlines.
type floorSession struct {
	locker  *floorLocker
	client  *floor.Client
	key     string
	token   [2 * tokenRandomBytes]byte
	command []byte
}

// tryLock sends SET key token NX PX ttl to every node at once and counts
// the OK replies. It holds the lock if a quorum said OK within the
// validity; otherwise it releases the nodes that said OK.
func (s *floorSession) tryLock(ctx context.Context) (bool, error) {
	if err := newToken(&s.token); err != nil {
		return false, err
	}
	start := time.Now()
	s.command = resp.AppendArrayHeader(s.command[:0], 6)
	s.command = resp.AppendBulkString(s.command, "SET")
	s.command = resp.AppendBulkString(s.command, s.key)
	s.command = resp.AppendBulk(s.command, s.token[:])
	s.command = resp.AppendBulkString(s.command, "NX")
	s.command = resp.AppendBulkString(s.command, "PX")
	s.command = resp.AppendBulkInt(s.command, lockTTL.Milliseconds())
	if err := s.client.RoundTrip(s.command); err != nil {
		return false, err
	}
	acquired := 0
	for _, reply := range s.client.Replies {
		switch reply {
		case '+':
			acquired++
		case '-':
			return false, floor.ErrReply
		}
	}
	validity := lockTTL - time.Since(start) - time.Duration(float64(lockTTL)*floorDriftFactor) - floorDriftFixed
	if acquired >= quorum(len(s.client.Replies)) && validity > 0 {
		return true, nil
	}
	if acquired > 0 {
		if _, err := s.release(); err != nil {
			return false, err
		}
	}
	return false, nil
}

// unlock runs the release script on every node at once.
func (s *floorSession) unlock(ctx context.Context) error {
	released, err := s.release()
	if err != nil {
		return err
	}
	if released < quorum(len(s.client.Replies)) {
		return errNotReleased
	}
	return nil
}

// release sends EVALSHA of the release script with the session's token to
// every node and returns how many nodes deleted the key.
func (s *floorSession) release() (int, error) {
	s.command = resp.AppendArrayHeader(s.command[:0], 5)
	s.command = resp.AppendBulkString(s.command, "EVALSHA")
	s.command = resp.AppendBulkString(s.command, s.locker.scriptSHA)
	s.command = resp.AppendBulkString(s.command, "1")
	s.command = resp.AppendBulkString(s.command, s.key)
	s.command = resp.AppendBulk(s.command, s.token[:])
	if err := s.client.RoundTrip(s.command); err != nil {
		return 0, err
	}
	released := 0
	for i, reply := range s.client.Replies {
		switch {
		case reply == '-':
			return 0, floor.ErrReply
		case reply == ':' && s.client.Integers[i] == 1:
			released++
		}
	}
	return released, nil
}

func (s *floorSession) close() {
	s.client.Close()
}
