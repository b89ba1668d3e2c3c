package faultnet

import (
	"errors"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// frameLimits are the limits the proxy frames the server's stream under: the
// hard maximums, so that any reply a real server sends is framed.
var frameLimits = resp.Limits{
	MaxBulkLength:      resp.HardMaxBulkLength,
	MaxAggregateLength: resp.HardMaxAggregateLength,
	MaxTotalElements:   resp.HardMaxTotalElements,
	MaxDepth:           resp.HardMaxDepth,
	MaxLineLength:      resp.HardMaxLineLength,
}

// framer finds the frame boundaries of a server's stream, fed in chunks of
// any size.
type framer struct {
	partial []byte // the bytes of the current frame, while it is incomplete
	broken  bool   // the stream is not RESP: framing has stopped for good
}

// atStart reports whether the next byte fed starts a frame.
func (f *framer) atStart() bool {
	return !f.broken && len(f.partial) == 0
}

// consume feeds data and returns how many of its first bytes belong to the
// current frame: all of them while the frame is incomplete, and all of them
// once the stream is broken.
func (f *framer) consume(data []byte) int {
	if f.broken {
		return len(data)
	}
	before := len(f.partial)
	buf := data
	if before > 0 {
		buf = append(f.partial, data...)
	}
	_, n, err := resp.Parse(buf, frameLimits)
	switch {
	case err == nil:
		f.partial = f.partial[:0]
		return n - before
	case errors.Is(err, resp.ErrIncomplete):
		if before > 0 {
			f.partial = buf
		} else {
			f.partial = append(f.partial[:0], data...)
		}
		return len(data)
	default:
		f.broken = true
		f.partial = nil
		return len(data)
	}
}

// fate is what happens to the bytes of a server frame.
type fate int

const (
	fateDeliver fate = iota // delivered, even while holding: it started before
	fateHold                // held while HoldReplies is on, else delivered
	fateDrop                // dropped by DropReplies
	fateDiscard             // discarded by a blackhole
)

// takeDown applies the modes to data read from the server at now.
func (u *pump) takeDown(data []byte, now time.Time) {
	p := u.link.proxy
	// Counted once the chunk's fate is settled, so that a test that has seen
	// the count may change the modes without changing what befalls it.
	defer p.serverBytes.Add(int64(len(data)))
	keep, reset := p.takeResetBudget(len(data))
	if reset {
		u.resetting = true
	}
	data = data[:keep]
	for len(data) > 0 {
		start := u.frames.atStart()
		n := u.frames.consume(data)
		segment := data[:n]
		data = data[n:]
		switch {
		case u.frames.broken:
			// Unframed bytes are delivered, or held while holding, so
			// that they stay behind the frames already held.
			u.fate = fateHold
		case start:
			u.startFrame(segment[0], now)
		}
		if p.blackhole.Load() {
			if !u.frames.broken {
				u.fate = fateDiscard // the frame is cut: drop its tail too
			}
			continue
		}
		u.route(segment, u.fate, now)
	}
}

// startFrame decides the fate of a frame whose first byte is first, and
// writes any injected bytes ahead of it.
func (u *pump) startFrame(first byte, now time.Time) {
	p := u.link.proxy
	if p.blackhole.Load() {
		u.fate = fateDiscard
		return
	}
	if injected := p.inject.Swap(nil); injected != nil {
		u.route(*injected, fateHold, now)
	}
	switch {
	case resp.Type(first) != resp.TypePush && p.takeDrop():
		u.fate = fateDrop
		p.repliesDropped.Add(1)
	case p.holding.Load():
		u.fate = fateHold
	default:
		u.fate = fateDeliver
	}
}

// route holds, queues or drops segment according to its fate.
func (u *pump) route(segment []byte, f fate, now time.Time) {
	p := u.link.proxy
	switch f {
	case fateDrop, fateDiscard:
		return
	case fateHold:
		if p.holding.Load() {
			u.held = append(u.held, append([]byte(nil), segment...))
			return
		}
	}
	u.releaseHeld(now)
	u.enqueue(segment, now.Add(time.Duration(p.downDelay.Load())))
}

// releaseHeld queues the held frames, which come before anything read after
// them. They are due at once: they have waited long enough, and the queue
// keeps them behind older bytes.
func (u *pump) releaseHeld(now time.Time) {
	for _, data := range u.held {
		u.queue = append(u.queue, chunk{due: now, data: data})
	}
	u.held = nil
}
