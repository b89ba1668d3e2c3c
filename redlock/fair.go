package redlock

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/round"
	"github.com/lockmux/lockmux/redlock/internal/waiting"
)

// waiterIDLength is the length of a fair waiter's random hexadecimal id.
const waiterIDLength = waiting.WaiterIDLength

// fairLine is a fair Lock's place in line, owned by the goroutine that
// has the turn.
type fairLine struct {
	id        [waiterIDLength]byte
	heartbeat []byte // the heartbeat's TTL in milliseconds, in decimal
	extras    [2][]byte
}

// heartbeat returns a fair waiter's heartbeat TTL: until its next attempt
// is certainly due.
func (m *Mutex) heartbeat() time.Duration {
	return notificationFallback*m.options.RetryDelayMax + 2*m.client.options.NodeTimeout
}

// joinLine puts a fair Lock's waiter in line in two rounds, as a fence is
// taken, so an earlier entry has the smaller ticket. It reports whether a
// quorum took the waiter, and fails when configuration refusals leave no
// quorum.
func (m *Mutex) joinLine(ctx context.Context, line *fairLine) (bool, error) {
	c := m.client
	a := &m.acquisition
	const digits = "0123456789abcdef"
	random := rand.Uint64()
	for i := range line.id {
		line.id[i] = digits[random&15]
		random >>= 4
	}
	line.heartbeat = strconv.AppendInt(line.heartbeat[:0], m.heartbeat().Milliseconds(), 10)
	r := m.acquisitionRound()
	m.start(r, round.FairTicket, line.id[:], 0, nil)
	if m.exchange(ctx, r) != nil || r.Tally.Got < c.need {
		return false, m.lineRefused()
	}
	var largest int64
	for _, node := range r.Tally.Nodes {
		if node.Outcome == round.OutcomeConfirmed {
			largest = max(largest, node.Number)
		}
	}
	line.extras = [2][]byte{line.id[:], line.heartbeat}
	a.extras = line.extras[:]
	m.start(r, round.FairEnqueue, line.id[:], largest+1, nil)
	if m.exchange(ctx, r) != nil || r.Tally.Got < c.need {
		err := m.lineRefused()
		m.leaveLine(line)
		return false, err
	}
	c.notifier.EnterLine(&m.wait.Waiter, line.id)
	return true, nil
}

// lineRefused returns a joinLine round's error when configuration
// refusals leave no quorum.
func (m *Mutex) lineRefused() error {
	tally := &m.acquisitionRound().Tally
	if !tally.RefusedByConfiguration() {
		return nil
	}
	return quorumError(tally, m.key, m.client.addresses, 0)
}

// leaveLine takes the waiter out of line on every node, without waiting.
func (m *Mutex) leaveLine(line *fairLine) {
	a := &m.acquisition
	a.extras = nil
	m.client.notifier.LeaveLine(&m.wait.Waiter)
	r := m.acquisitionRound()
	m.start(r, round.FairLeave, line.id[:], 0, nil)
	m.send(r)
}
