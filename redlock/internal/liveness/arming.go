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
func (w *Watcher[L]) StartArming(l L, generation, tag uint64, only int) {
	w.Go(func() { w.Arm(l, generation, tag, only) })
}

// Arm arms the keys of l's hold of the given generation under tag, on
// node or on AllNodes, and checks what the read saw: every key with the
// hold's token and a TTL no shorter than the validity left. A key found
// cut short or gone makes the hold renew at once. Nothing is armed once
// a newer own write of the hold, or its end, made tag stale.
func (w *Watcher[L]) Arm(l L, generation, tag uint64, only int) {
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
		had := current && h.Watching[node]
		token := bytes.Clone(h.Token)
		h.Mu.Unlock()
		if !current {
			return
		}
		if !had {
			continue
		}
		if err := subscriber.Track(w.ctx, node, request, tag, keys...); err != nil {
			w.refused(node, err)
			continue // not armed: the renewal's schedule watches this node
		}
		now := w.clock.Now()
		h.Mu.Lock()
		current = h.CurrentLocked(generation) && !h.Lost && h.WatchTag == tag
		left := h.Until.Sub(now)
		h.Mu.Unlock()
		if current && !Whole(request.Reply(), token, left) {
			l.RenewNow(generation)
			return
		}
	}
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
