package liveness

import (
	"bytes"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/resp"
)

// AllNodes asks Arm to arm every node the hold has.
const AllNodes = -1

// StartArming runs Arm on a goroutine of w's: a round trip to each node,
// which no caller waits for.
func (w *Watcher[L]) StartArming(l L, generation, tag uint64, only int, unsure []bool) {
	w.Go(func() { w.Arm(l, generation, tag, only, unsure) })
}

// Arm arms the keys of l's hold of the given generation under tag, on
// node or on AllNodes, each node the hold watches (Hold.Watching), and
// checks what the read saw: every key with the hold's token and a TTL no
// shorter than the validity left. A key found cut short or gone makes the
// hold renew at once. Nothing is armed once a newer own write of the
// hold, or its end, made tag stale.
//
// unsure, nil or one entry per node, marks the watched nodes whose
// outcome the write's round did not learn (see judgeLocked): their read
// tells whether they hold the keys at all.
func (w *Watcher[L]) Arm(l L, generation, tag uint64, only int, unsure []bool) {
	subscriber := w.subscriber()
	if subscriber == nil {
		return
	}
	keys := l.Keys()
	request := mux.NewRequest()
	request.SetEval(protocol.Watch, len(keys), 0)
	for _, key := range keys {
		request.AppendString(key)
	}
	h := l.Hold()
	for node := range w.nodes {
		if only != AllNodes && node != only {
			continue
		}
		h.Mu.Lock()
		current := h.CurrentLocked(generation) && !h.Lost && h.WatchTag == tag && !h.Writing
		had := current && (h.Watching[node] || isUnsure(unsure, node))
		token := bytes.Clone(h.Token)
		h.Mu.Unlock()
		if !current {
			return
		}
		if !had {
			continue
		}
		err := subscriber.Track(w.ctx, node, request, tag, keys...)
		if err != nil {
			w.refused(node, err)
		}
		now := w.clock.Now()
		h.Mu.Lock()
		current = h.CurrentLocked(generation) && !h.Lost && h.WatchTag == tag
		renew := current && judgeLocked(h, node, isUnsure(unsure, node), request.Reply(), err, token, h.Until.Sub(now))
		h.Mu.Unlock()
		if renew {
			l.RenewNow(generation)
			return
		}
	}
}

// judgeLocked judges the arming read of node for the current hold h, and
// reports whether the hold must renew at once: a key cut short or gone.
// A read that failed armed nothing: the renewal's schedule watches the
// node. A node whose outcome the round did not learn (unsure: a reply not
// awaited once a quorum decided) is watched from the moment a read shows
// every key with the hold's token. A read that does not, the node having
// refused the write (a key held by another, missing) or not applied it
// yet, changes nothing, even if another read of the node showed the keys
// meanwhile: the node's changes make it judged again (see Invalidated).
// The caller holds h.Mu.
func judgeLocked(h *Hold, node int, unsure bool, reply resp.Value, err error, token []byte, left time.Duration) (renew bool) {
	switch {
	case err != nil:
		return false
	case unsure:
		if !holdsToken(reply, token) {
			return false
		}
		h.Watching[node] = true
	}
	return !Whole(reply, token, left)
}

// isUnsure reports whether unsure marks node.
func isUnsure(unsure []bool, node int) bool { return node < len(unsure) && unsure[node] }

// holdsToken reports whether the reply of protocol.Watch shows every key
// with token, whatever its TTL.
func holdsToken(reply resp.Value, token []byte) bool {
	if reply.Type != resp.TypeArray || len(reply.Elems)%2 != 0 {
		return false
	}
	for i := 0; i < len(reply.Elems); i += 2 {
		if value := reply.Elems[i]; value.Null || !bytes.Equal(value.Str, token) {
			return false
		}
	}
	return true
}

// Whole reports whether the reply of protocol.Watch shows every key with
// token and a remaining TTL no shorter than left.
func Whole(reply resp.Value, token []byte, left time.Duration) bool {
	if reply.Type != resp.TypeArray || len(reply.Elems)%2 != 0 {
		return false
	}
	for i := 0; i < len(reply.Elems); i += 2 {
		value, ttl := reply.Elems[i], reply.Elems[i+1]
		if value.Null || !bytes.Equal(value.Str, token) || ttl.Type != resp.TypeInteger {
			return false
		}
		if time.Duration(ttl.Int)*time.Millisecond < left {
			return false
		}
	}
	return true
}
