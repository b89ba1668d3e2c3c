package bench

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// goRedisLocker is the lock people write by hand with go-redis v9: SET NX
// PX with a random token, and the compare-and-delete script by EVALSHA
// (go-redis's Script.Run, which falls back to EVAL on NOSCRIPT). It uses
// one node and one client shared by all sessions.
type goRedisLocker struct {
	client  *redis.Client
	release *redis.Script
}

// openGoRedis connects to the first address and loads the release script.
func openGoRedis(addresses []string) (locker, error) {
	l := &goRedisLocker{
		client:  redis.NewClient(&redis.Options{Addr: addresses[0]}),
		release: redis.NewScript(releaseScript),
	}
	if err := l.release.Load(context.Background(), l.client).Err(); err != nil {
		l.client.Close()
		return nil, fmt.Errorf("goredis: script load: %w", err)
	}
	return l, nil
}

func (l *goRedisLocker) newSession(key string) (session, error) {
	return &goRedisSession{locker: l, key: key}, nil
}

func (l *goRedisLocker) close() {
	l.client.Close()
}

// goRedisSession holds the token of its current hold.
type goRedisSession struct {
	locker *goRedisLocker
	key    string
	token  string
}

func (s *goRedisSession) tryLock(ctx context.Context) (bool, error) {
	token, err := newTokenString()
	if err != nil {
		return false, err
	}
	acquired, err := s.locker.client.SetNX(ctx, s.key, token, lockTTL).Result()
	if err != nil || !acquired {
		return false, err
	}
	s.token = token
	return true, nil
}

func (s *goRedisSession) unlock(ctx context.Context) error {
	released, err := s.locker.release.Run(ctx, s.locker.client, []string{s.key}, s.token).Int64()
	if err != nil {
		return err
	}
	if released != 1 {
		return errNotReleased
	}
	return nil
}

func (s *goRedisSession) close() {}
