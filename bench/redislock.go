package bench

import (
	"context"
	"errors"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// redislockLocker is bsm/redislock over one go-redis v9 client on one node.
// It has no blocking lock of its own (its default retry strategy is not to
// retry), so it takes part in the single-attempt scenarios only.
type redislockLocker struct {
	redisClient *redis.Client
	client      *redislock.Client
}

func openRedislock(addresses []string) (locker, error) {
	redisClient := redis.NewClient(&redis.Options{Addr: addresses[0]})
	return &redislockLocker{redisClient: redisClient, client: redislock.New(redisClient)}, nil
}

func (l *redislockLocker) newSession(key string) (session, error) {
	return &redislockSession{client: l.client, key: key}, nil
}

func (l *redislockLocker) close() {
	l.redisClient.Close()
}

// redislockSession holds the *redislock.Lock of its current hold.
type redislockSession struct {
	client *redislock.Client
	key    string
	held   *redislock.Lock
}

func (s *redislockSession) tryLock(ctx context.Context) (bool, error) {
	held, err := s.client.Obtain(ctx, s.key, lockTTL, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.held = held
	return true, nil
}

func (s *redislockSession) unlock(ctx context.Context) error {
	held := s.held
	s.held = nil
	return held.Release(ctx)
}

func (s *redislockSession) close() {}
