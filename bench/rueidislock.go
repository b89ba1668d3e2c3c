package bench

import (
	"context"
	"errors"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidislockLocker is rueidis's rueidislock over one rueidis client on one
// node, with KeyMajority 1: one key per lock.
//
// Its design differs from the other peers. Each acquisition starts a
// goroutine that renews the key until the hold ends, and the lock is
// released by cancelling the hold's context (the cancel function waits for
// the release). Its waiters in one process share a local gate, woken by the
// local release or by a RESP3 client-side caching invalidation of the key,
// and poll no server.
type rueidislockLocker struct {
	locker rueidislock.Locker
}

func openRueidislock(addresses []string) (locker, error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: addresses[:1]},
		KeyMajority:  1,
		KeyValidity:  lockTTL,
		// Its default, 20 ms, fails attempts with context.DeadlineExceeded
		// when a loaded machine stalls the process; 50 ms is the per-node
		// timeout of lockmux's defaults.
		TryNextAfter: 50 * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	return &rueidislockLocker{locker: l}, nil
}

func (l *rueidislockLocker) newSession(key string) (session, error) {
	return &rueidislockSession{locker: l.locker, key: key}, nil
}

func (l *rueidislockLocker) close() {
	l.locker.Close()
}

// rueidislockSession keeps the cancel function of its current hold.
type rueidislockSession struct {
	locker  rueidislock.Locker
	key     string
	release context.CancelFunc
}

func (s *rueidislockSession) tryLock(ctx context.Context) (bool, error) {
	_, release, err := s.locker.TryWithContext(ctx, s.key)
	if errors.Is(err, rueidislock.ErrNotLocked) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	s.release = release
	return true, nil
}

func (s *rueidislockSession) lock(ctx context.Context) error {
	_, release, err := s.locker.WithContext(ctx, s.key)
	if err != nil {
		return err
	}
	s.release = release
	return nil
}

// unlock cancels the hold's context and waits for the release. rueidislock
// does not say whether the key was still held.
func (s *rueidislockSession) unlock(context.Context) error {
	release := s.release
	s.release = nil
	release()
	return nil
}

func (s *rueidislockSession) close() {}
