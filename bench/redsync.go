package bench

import (
	"context"
	"errors"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// redsyncLocker is go-redsync/redsync v4 with one go-redis v9 client (and
// redsync pool) per node.
type redsyncLocker struct {
	clients []*redis.Client
	redsync *redsync.Redsync
}

func openRedsync(addresses []string) (locker, error) {
	l := &redsyncLocker{}
	pools := make([]redsyncredis.Pool, len(addresses))
	for i, address := range addresses {
		client := redis.NewClient(&redis.Options{Addr: address})
		l.clients = append(l.clients, client)
		pools[i] = goredis.NewPool(client)
	}
	l.redsync = redsync.New(pools...)
	return l, nil
}

// newSession makes one redsync Mutex for the key, reused for every cycle.
// Its options are redsync's defaults (32 tries 50 to 250 ms apart) but for
// the TTL; single attempts go through TryLockContext, which is the same as
// a Mutex made WithTries(1).
func (l *redsyncLocker) newSession(key string) (session, error) {
	return &redsyncSession{mutex: l.redsync.NewMutex(key, redsync.WithExpiry(lockTTL))}, nil
}

func (l *redsyncLocker) close() {
	for _, client := range l.clients {
		client.Close()
	}
}

type redsyncSession struct {
	mutex *redsync.Mutex
}

func (s *redsyncSession) tryLock(ctx context.Context) (bool, error) {
	return redsyncAcquired(s.mutex.TryLockContext(ctx))
}

// lock calls LockContext again when it gives up after its 32 tries, until
// it acquires or ctx is done.
func (s *redsyncSession) lock(ctx context.Context) error {
	for {
		acquired, err := redsyncAcquired(s.mutex.LockContext(ctx))
		switch {
		case err != nil:
			return err
		case acquired:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		}
	}
}

func (s *redsyncSession) unlock(ctx context.Context) error {
	released, err := s.mutex.UnlockContext(ctx)
	if err != nil {
		return err
	}
	if !released {
		return errNotReleased
	}
	return nil
}

func (s *redsyncSession) close() {}

// redsyncAcquired sorts the error of a redsync lock attempt: nil means
// acquired; ErrFailed, ErrTaken and ErrNodeTaken mean held by someone else,
// unless a node also failed with a RedisError, which is an error.
func redsyncAcquired(err error) (bool, error) {
	if err == nil {
		return true, nil
	}
	var redisError *redsync.RedisError
	if errors.As(err, &redisError) {
		return false, err
	}
	var taken *redsync.ErrTaken
	var nodeTaken *redsync.ErrNodeTaken
	if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) || errors.As(err, &nodeTaken) {
		return false, nil
	}
	return false, err
}
