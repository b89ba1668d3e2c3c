package faultnet

import "time"

// Pass turns every fault off: no delay, no blackhole, no dropped, held or
// injected bytes, no reset armed. Replies held by HoldReplies are delivered,
// in order; bytes already discarded by a blackhole are not. Bytes already
// delayed keep the delivery time they were given.
func (p *Proxy) Pass() {
	p.blackhole.Store(false)
	p.upDelay.Store(0)
	p.downDelay.Store(0)
	p.dropBudget.Store(0)
	p.holding.Store(false)
	p.resetBudget.Store(noReset)
	p.inject.Store(nil)
	p.kick()
}

// Delay adds up to every chunk of bytes going from a client to the server,
// and down to every chunk going from the server to a client, measured from
// the moment the proxy reads the chunk. Each direction keeps its bytes in a
// time-ordered queue, so nothing is reordered: when the delay shrinks, new
// bytes still wait for the older ones. Chunks already queued keep their time.
// Negative durations count as zero; Delay(0, 0) turns the delay off.
func (p *Proxy) Delay(up, down time.Duration) {
	p.upDelay.Store(int64(max(up, 0)))
	p.downDelay.Store(int64(max(down, 0)))
	p.kick()
}

// Blackhole stops forwarding in both directions while keeping the sockets
// open: bytes read from clients and from the server are discarded, and so
// are delayed bytes that fall due meanwhile, so a client hears silence
// rather than a reset. An orderly close from either side still goes through,
// so that links do not outlive their clients. Heal or Pass ends it.
func (p *Proxy) Blackhole() {
	p.blackhole.Store(true)
	p.kick()
}

// Partition is Blackhole, under the name that reads well in partition tests.
func (p *Proxy) Partition() {
	p.Blackhole()
}

// Heal is Pass, under the name that reads well after Partition: the links
// forward again, and nothing discarded while they were blackholed is
// delivered. A frame cut by the blackhole stays cut, so a client should drop
// a connection that timed out, as it would on a real network.
func (p *Proxy) Heal() {
	p.Pass()
}

// DropReplies drops the next n reply frames that start after the call,
// counted over all links in the order the proxy reads them, while requests
// still reach the server: the server executes the commands and the client
// never hears back. Replies to commands sent before the call count if they
// arrive after it, so a test that must let a handshake through calls
// DropReplies once the handshake is answered. Push frames are not counted. A
// dropped frame is never held. DropReplies(0) cancels the drops still due;
// RepliesDropped counts the frames dropped.
func (p *Proxy) DropReplies(n int) {
	p.dropBudget.Store(int64(max(n, 0)))
}

// HoldReplies holds every frame of the server, replies and pushes alike, that
// starts after the call, on every link, until ReleaseReplies or Pass. A frame
// that has started before the call is delivered whole.
func (p *Proxy) HoldReplies() {
	p.holding.Store(true)
}

// ReleaseReplies stops holding and delivers, on each link, the frames held
// since HoldReplies, in order and before any later byte of that link.
func (p *Proxy) ReleaseReplies() {
	p.holding.Store(false)
	p.kick()
}

// ResetAfter lets n more bytes come from the server, counted over all links
// from the call, then resets the link that reads byte number n: the bytes up
// to it are delivered (after any delay) and both of the link's sockets are
// closed with a TCP RST, in the middle of a frame if that is where byte n
// falls. The rest of the chunk in which byte n arrived is discarded.
// ResetAfter(0) resets the next link that receives anything from the server.
// It fires once; later links pass. Pass disarms it.
func (p *Proxy) ResetAfter(n int) {
	p.resetBudget.Store(int64(max(n, 0)))
}

// Inject writes b to a client just before the next frame that the server
// starts on any link after the call. Injected bytes are not a reply: they are
// never dropped, but they are held and delayed like the frame they precede,
// and discarded if that frame is blackholed. Calls before that frame append
// their bytes. Inject copies b.
func (p *Proxy) Inject(b []byte) {
	if len(b) == 0 {
		return
	}
	for {
		old := p.inject.Load()
		var joined []byte
		if old != nil {
			joined = append(joined, *old...)
		}
		joined = append(joined, b...)
		if p.inject.CompareAndSwap(old, &joined) {
			return
		}
	}
}

// Retarget forwards the connections accepted from now on to upstream, a
// loopback "host:port", and resets every open link, as a failover behind
// one address (a virtual IP, a DNS name) looks to the clients. It panics
// for an upstream that is not on loopback.
func (p *Proxy) Retarget(upstream string) {
	if !isLoopback(upstream) {
		panic("faultnet: upstream " + upstream + " is not a loopback address")
	}
	p.upstream.Store(&upstream)
	p.CutLinks()
}

// CutLinks resets every open link at once, both sockets with a TCP RST, as
// a restarting server looks to its clients. New connections are accepted and
// forwarded as usual.
func (p *Proxy) CutLinks() {
	p.eachLink(func(l *link) { l.shut(true) })
}

// kick makes every pump look at the modes again, so that a change which
// needs no new bytes (a release, a shorter delay) takes effect now.
func (p *Proxy) kick() {
	p.eachLink(func(l *link) {
		l.up.kick()
		l.down.kick()
	})
}

// takeDrop consumes one frame of the DropReplies budget, if any is left.
func (p *Proxy) takeDrop() bool {
	for {
		left := p.dropBudget.Load()
		if left <= 0 {
			return false
		}
		if p.dropBudget.CompareAndSwap(left, left-1) {
			return true
		}
	}
}

// takeResetBudget consumes n bytes of the ResetAfter budget. It returns how
// many of the n bytes may still be forwarded, and whether the link must be
// reset after them, which disarms ResetAfter.
func (p *Proxy) takeResetBudget(n int) (int, bool) {
	for {
		left := p.resetBudget.Load()
		switch {
		case left == noReset:
			return n, false
		case left > int64(n):
			if p.resetBudget.CompareAndSwap(left, left-int64(n)) {
				return n, false
			}
		default:
			if p.resetBudget.CompareAndSwap(left, noReset) {
				return int(left), true
			}
		}
	}
}
