package faultnet

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// readSize is the size of a pump's read buffer.
const readSize = 32 << 10

// direction says which way a pump moves bytes.
type direction int

const (
	directionUp   direction = iota // client → server
	directionDown                  // server → client: frame-aware
)

// chunk is bytes waiting in a pump's queue until their delivery time.
type chunk struct {
	due  time.Time
	data []byte
}

// pump moves the bytes of one direction of a link. Its goroutine reads from
// src, applies the proxy's modes, and writes to dst from a time-ordered
// queue. It waits for new bytes and for the next delivery time in the same
// Read, whose deadline is the time the queue's head falls due; kick cuts that
// wait short when the modes change.
type pump struct {
	link      *link
	direction direction
	src, dst  *net.TCPConn

	// kicked and wake are set by kick, from any goroutine.
	kicked atomic.Bool   // the modes changed since the loop last looked
	wake   chan struct{} // capacity 1: wakes the pump when it is not reading

	// The fields below are owned by the pump's goroutine.
	queue     []chunk  // bytes to write, in stream order
	frames    framer   // frame boundaries of the server's stream (down only)
	fate      fate     // what happens to the rest of the current frame (down only)
	held      [][]byte // frames held by HoldReplies, in stream order (down only)
	srcDone   bool     // src reached EOF: drain the queue, then half close dst
	resetting bool     // ResetAfter fired: drain the queue, then reset the link
}

// newPump returns a pump of the given direction for link l.
func newPump(l *link, d direction, src, dst *net.TCPConn) *pump {
	return &pump{
		link:      l,
		direction: d,
		src:       src,
		dst:       dst,
		wake:      make(chan struct{}, 1),
	}
}

// kick makes the pump look at the modes again without waiting for bytes.
// Setting a read deadline in the past ends a Read in progress; the flag covers
// a kick that comes just before the pump sets its own deadline, and wake one
// that comes while the pump is not reading.
func (u *pump) kick() {
	u.kicked.Store(true)
	select {
	case u.wake <- struct{}{}:
	default:
	}
	u.src.SetReadDeadline(time.Unix(1, 0))
}

// run is the pump's goroutine. It returns when the link is closed, when src
// ends and the queue is drained, or when ResetAfter fires on this pump.
func (u *pump) run() {
	defer u.link.pumpDone()
	buf := make([]byte, readSize)
	for {
		u.kicked.Store(false)
		if err := u.writeDue(); err != nil {
			u.link.shut(false)
			return
		}
		if u.srcDone || u.resetting {
			if u.drained() {
				u.finish()
				return
			}
			if !u.sleep() {
				return
			}
			continue
		}
		var deadline time.Time // none
		if len(u.queue) > 0 {
			deadline = u.queue[0].due
		}
		u.src.SetReadDeadline(deadline)
		if u.kicked.Load() {
			continue
		}
		n, err := u.src.Read(buf)
		if n > 0 {
			u.take(buf[:n], time.Now())
		}
		switch {
		case err == nil, errors.Is(err, os.ErrDeadlineExceeded):
		case errors.Is(err, io.EOF):
			u.srcDone = true
		case errors.Is(err, syscall.ECONNRESET):
			u.link.shut(true) // pass the reset on
			return
		default: // closed by shut, or broken
			u.link.shut(false)
			return
		}
	}
}

// drained reports whether nothing is left to deliver before the pump ends.
// Held frames are waited for while src is done, not when a reset is due.
func (u *pump) drained() bool {
	if u.resetting {
		return len(u.queue) == 0
	}
	return len(u.queue) == 0 && len(u.held) == 0
}

// finish ends the pump's direction: a reset of the whole link when ResetAfter
// fired, else a half close passing on the EOF of src.
func (u *pump) finish() {
	if u.resetting {
		u.link.shut(true)
		return
	}
	u.dst.CloseWrite()
}

// sleep waits, without reading, until the queue's head falls due, a kick, or
// the link's end. It returns false at the link's end.
func (u *pump) sleep() bool {
	var due <-chan time.Time
	if len(u.queue) > 0 {
		timer := time.NewTimer(time.Until(u.queue[0].due))
		defer timer.Stop()
		due = timer.C
	}
	select {
	case <-due:
	case <-u.wake:
	case <-u.link.closed:
		return false
	}
	return true
}

// take applies the modes to data, read from src at now, and queues what is
// to be delivered. It copies what it keeps.
func (u *pump) take(data []byte, now time.Time) {
	p := u.link.proxy
	if u.direction == directionDown {
		u.takeDown(data, now)
		return
	}
	if p.blackhole.Load() {
		return
	}
	u.enqueue(data, now.Add(time.Duration(p.upDelay.Load())))
}

// enqueue queues a copy of data for delivery at due.
func (u *pump) enqueue(data []byte, due time.Time) {
	u.queue = append(u.queue, chunk{due: due, data: append([]byte(nil), data...)})
}

// writeDue releases held frames when HoldReplies is over, then writes every
// chunk whose time has come, discarding them under a blackhole.
func (u *pump) writeDue() error {
	p := u.link.proxy
	if len(u.held) > 0 && !p.holding.Load() {
		u.releaseHeld(time.Now())
	}
	counter := &p.bytesUp
	if u.direction == directionDown {
		counter = &p.bytesDown
	}
	now := time.Now()
	for len(u.queue) > 0 && !u.queue[0].due.After(now) {
		data := u.queue[0].data
		u.queue[0] = chunk{}
		u.queue = u.queue[1:]
		if p.blackhole.Load() {
			continue
		}
		// Count first, so that whoever sees the bytes sees them counted.
		counter.Add(int64(len(data)))
		n, err := u.dst.Write(data)
		if err != nil {
			counter.Add(int64(n - len(data)))
			return err
		}
	}
	if len(u.queue) == 0 {
		u.queue = nil // let a long queue's array go
	}
	return nil
}
