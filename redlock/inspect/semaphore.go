package inspect

import (
	"context"
	"fmt"

	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// SemaphoreStatus is what the nodes hold of a redlock.Semaphore: the
// status of each of its permits.
type SemaphoreStatus struct {
	// Name is the semaphore's name.
	Name string
	// Permits holds the status of each permit's key, slot by slot.
	Permits []LockStatus
}

// Held returns the number of permits that a quorum of nodes holds.
func (s SemaphoreStatus) Held() int {
	held := 0
	for _, permit := range s.Permits {
		if permit.Locked() {
			held++
		}
	}
	return held
}

// SemaphoreStatus reads the permits of the semaphore name with limit
// permits, as Status reads a lock, one permit after the other. It changes
// nothing. limit must be the semaphore's: the permits are the keys of its
// slots (see redlock.Semaphore).
func (i *Inspector) SemaphoreStatus(ctx context.Context, name string, limit int) (SemaphoreStatus, error) {
	if limit < 1 || limit > redlock.MaxSemaphoreLimit {
		return SemaphoreStatus{}, fmt.Errorf("inspect: %w: the limit %d is not in [1, %d]", redlock.ErrInvalidOptions, limit, redlock.MaxSemaphoreLimit)
	}
	status := SemaphoreStatus{Name: name, Permits: make([]LockStatus, limit)}
	for slot := range limit {
		permit, err := i.Status(ctx, naming.PermitKey(name, slot))
		if err != nil {
			return SemaphoreStatus{}, err
		}
		status.Permits[slot] = permit
	}
	return status, nil
}
