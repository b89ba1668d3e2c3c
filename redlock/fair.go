package redlock

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/lockmux/lockmux/redlock/internal/waiting"
)

// waiterIDLength is the length of a fair lock's waiter identity: 16
// hexadecimal digits of a random 64-bit number, drawn by each Lock that
// joins the line.
const waiterIDLength = waiting.WaiterIDLength

// fairLine is what a fair Mutex's Lock keeps while it waits in line: its
// identity and the heartbeat's TTL, the extra arguments of its attempts.
// It belongs to the goroutine that has the turn.
type fairLine struct {
	id        [waiterIDLength]byte
	heartbeat []byte // the heartbeat's TTL in milliseconds, in decimal
	extras    [2][]byte
}

// heartbeat returns the TTL of a fair lock's waiter's heartbeat: until its
// next attempt is certainly due, as a Lock that waits sleeps at most
// notificationFallback retry delays, and its rounds a node timeout each.
func (m *Mutex) heartbeat() time.Duration {
	return notificationFallback*m.options.RetryDelayMax + 2*m.client.options.NodeTimeout
}

// joinLine puts the waiter of a fair Mutex's Lock in line, in two rounds,
// as a fence is taken: the ticket is one above the largest counter a
// quorum of nodes has, and it is written, with the waiter, to every node.
// A waiter whose entry finished before another's began has the smaller
// ticket: the two quorums share a node. Its later attempts then carry its
// identity. It reports whether a quorum took the waiter; one that did not
// joins again after its next failed attempt. It fails when the nodes that
// refused a round by their configuration (an ACL without a command the
// scripts call) leave no quorum: retrying cannot fix that.
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
	m.start(r, nodeFairTicket, line.id[:], 0, nil)
	if m.exchange(ctx, r) != nil || r.tally.got < c.need {
		return false, m.lineRefused()
	}
	var largest int64
	for _, node := range r.tally.nodes {
		if node.outcome == OutcomeConfirmed {
			largest = max(largest, node.number)
		}
	}
	line.extras = [2][]byte{line.id[:], line.heartbeat}
	a.extras = line.extras[:]
	m.start(r, nodeFairEnqueue, line.id[:], largest+1, nil)
	if m.exchange(ctx, r) != nil || r.tally.got < c.need {
		err := m.lineRefused()
		m.leaveLine(line)
		return false, err
	}
	c.notifier.EnterLine(&m.wait.Waiter, line.id)
	return true, nil
}

// lineRefused returns the error of a round of joinLine that failed, when
// the nodes that refused it by their configuration leave no quorum; nil
// otherwise.
func (m *Mutex) lineRefused() error {
	tally := &m.acquisitionRound().tally
	if !tally.refusedByConfiguration() {
		return nil
	}
	return tally.quorumError(m.key, m.client.addresses, 0)
}

// leaveLine takes the waiter out of line on every node, without waiting:
// a Lock that gave up, or that lost its place and joins again. Its
// heartbeat would end its place anyway.
func (m *Mutex) leaveLine(line *fairLine) {
	a := &m.acquisition
	a.extras = nil
	m.client.notifier.LeaveLine(&m.wait.Waiter)
	r := m.acquisitionRound()
	m.start(r, nodeFairLeave, line.id[:], 0, nil)
	m.send(r)
}
