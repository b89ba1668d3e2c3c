package redlock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/round"
)

// RWMutex is a read/write lock across the Client's nodes: many readers or
// one writer, and writers come first. Its holds are a Mutex's; only the
// writer's get fences. One RWMutex has one hold at a time: goroutines that
// read together use one each (docs/lock-family.md).
type RWMutex struct {
	reader, writer *Mutex
}

// The keys of a read/write lock besides name, shared with inspect.
const (
	readersKeySuffix = naming.ReadersKeySuffix
	waitingKeySuffix = naming.WaitingKeySuffix
)

// NewRWMutex returns a read/write lock named name. Keys and Token must be
// empty; with invalid options, every call returns ErrInvalidOptions.
func (c *Client) NewRWMutex(name string, options MutexOptions) *RWMutex {
	writerKey, readersKey, waitingKey := name, name+readersKeySuffix, name+waitingKeySuffix
	reading := options
	reading.Fencing = false
	rw := &RWMutex{writer: newMutex(c, writerKey, options), reader: newMutex(c, readersKey, reading)}
	var err error
	switch {
	case len(options.Keys) > 0:
		err = invalidOption("MutexOptions.Keys", options.Keys, "is not empty: a read/write lock is one resource")
	case options.Token != "":
		err = invalidOption("MutexOptions.Token", options.Token, "is set: a read hold and a write hold cannot share a token")
	default:
		err = c.sameSlot([]string{writerKey, readersKey, waitingKey})
	}
	for _, m := range []*Mutex{rw.writer, rw.reader} {
		if m.err == nil {
			m.err = err
		}
	}
	rw.writer.kind = round.KindWrite
	rw.writer.setGuards([]string{readersKey, waitingKey})
	if err == nil && rw.writer.err == nil {
		// The marker lasts until the writer's next attempt is due.
		marker := notificationFallback*rw.writer.retryDelayMax + 2*c.options.NodeTimeout
		rw.writer.acquisition.extras = [][]byte{strconv.AppendInt(nil, max(marker, time.Millisecond).Milliseconds(), 10)}
	}
	rw.reader.kind = round.KindRead
	rw.reader.setGuards([]string{writerKey, waitingKey})
	rw.writer.channels = []string{c.releasedChannel(writerKey), c.releasedChannel(readersKey)}
	rw.reader.channels = []string{c.releasedChannel(writerKey)}
	return rw
}

// Writer returns the Mutex of the write hold.
func (rw *RWMutex) Writer() *Mutex { return rw.writer }

// Reader returns the Mutex of the read hold.
func (rw *RWMutex) Reader() *Mutex { return rw.reader }

// Lock takes the write lock as Mutex.Lock does, waiting for the readers
// to leave. It returns ErrWouldDeadlock while its read hold is held.
func (rw *RWMutex) Lock(ctx context.Context) error {
	if err := rw.refuse(rw.reader); err != nil {
		return err
	}
	return rw.writer.Lock(ctx)
}

// TryLock makes one attempt at the write lock, as Mutex.TryLock does. It
// returns ErrWouldDeadlock while its read hold is held.
func (rw *RWMutex) TryLock(ctx context.Context) error {
	if err := rw.refuse(rw.reader); err != nil {
		return err
	}
	return rw.writer.TryLock(ctx)
}

// Unlock releases the write lock, as Mutex.Unlock does.
func (rw *RWMutex) Unlock(ctx context.Context) error { return rw.writer.Unlock(ctx) }

// RLock takes a read lock as Mutex.Lock does, waiting while a writer holds
// or waits. It returns ErrWouldDeadlock while its write hold is held.
func (rw *RWMutex) RLock(ctx context.Context) error {
	if err := rw.refuse(rw.writer); err != nil {
		return err
	}
	return rw.reader.Lock(ctx)
}

// TryRLock makes one attempt at a read lock, as Mutex.TryLock does. It
// returns ErrWouldDeadlock while its write hold is held.
func (rw *RWMutex) TryRLock(ctx context.Context) error {
	if err := rw.refuse(rw.writer); err != nil {
		return err
	}
	return rw.reader.TryLock(ctx)
}

// RUnlock releases the read lock, as Mutex.Unlock does.
func (rw *RWMutex) RUnlock(ctx context.Context) error { return rw.reader.Unlock(ctx) }

// refuse returns ErrWouldDeadlock while own is held.
func (rw *RWMutex) refuse(own *Mutex) error {
	if own.err != nil || !own.hold.IsHeld() {
		return nil
	}
	if own == rw.reader {
		return fmt.Errorf("%w: the read hold of %q is not upgraded: RUnlock, then Lock", ErrWouldDeadlock, rw.writer.key)
	}
	return fmt.Errorf("%w: the write hold of %q refuses readers: Downgrade turns it into a read hold", ErrWouldDeadlock, rw.writer.key)
}

// Downgrade turns the write hold into a read hold with nobody in between.
// It fails as TryRLock does, keeping the write hold; with ErrNotHeld
// without one; or with the write Unlock's error after the read hold.
func (rw *RWMutex) Downgrade(ctx context.Context) error {
	w, r := rw.writer, rw.reader
	if w.err != nil {
		return w.err
	}
	owner := w.hold.ValueOf(currentHold)
	if owner == nil {
		return ErrNotHeld
	}
	if !r.turn.TryTake() {
		return errHeldLocally
	}
	// The owner is read by the attempt's rounds only, with the turn.
	r.acquisition.extras = [][]byte{owner}
	elapsed, generation, err := r.attempt(ctx, 1)
	r.acquisition.extras = nil
	if _, err := r.tried(elapsed, generation, err, nil); err != nil {
		return err
	}
	return w.Unlock(ctx)
}
