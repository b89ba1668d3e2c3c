package bench

import (
	"context"
	"errors"

	"github.com/lockmux/lockmux/redlock"
)

// lockmuxLocker is lockmux's redlock.Client over the N nodes, with default
// options.
type lockmuxLocker struct {
	client *redlock.Client
}

func openLockmux(addresses []string) (locker, error) {
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		return nil, err
	}
	return &lockmuxLocker{client: client}, nil
}

// newSession makes one Mutex for the key, reused for every cycle.
func (l *lockmuxLocker) newSession(key string) (session, error) {
	return &lockmuxSession{mutex: l.client.NewMutex(key, redlock.MutexOptions{TTL: lockTTL})}, nil
}

func (l *lockmuxLocker) close() {
	l.client.Close()
}

type lockmuxSession struct {
	mutex *redlock.Mutex
}

func (s *lockmuxSession) tryLock(ctx context.Context) (bool, error) {
	err := s.mutex.TryLock(ctx)
	// A quorum out of reach because nodes failed is an error, not a lock
	// held by someone else.
	if errors.Is(err, redlock.ErrNotAcquired) && !errors.Is(err, redlock.ErrQuorumUnreachable) {
		return false, nil
	}
	return err == nil, err
}

func (s *lockmuxSession) lock(ctx context.Context) error {
	return s.mutex.Lock(ctx)
}

func (s *lockmuxSession) unlock(ctx context.Context) error {
	return s.mutex.Unlock(ctx)
}

func (s *lockmuxSession) close() {}
