package protocol

import (
	"bytes"
	"math"

	"github.com/lockmux/lockmux/resp"
)

// Outcome is what a node's reply says of the keys: redlock.Outcome's first
// three values.
type Outcome uint8

const (
	Confirmed Outcome = iota // the node did what was asked
	Held                     // a key holds another token
	Missing                  // a key is missing or expired
)

// IsFenceError reports whether an error reply is a fencing script's
// refusal of a counter or a fence (FenceErrorCode).
func IsFenceError(reply resp.Value) bool {
	return string(resp.ErrorCode(reply.Str)) == FenceErrorCode
}

// ReadAcquire reads an acquisition: OK, or a refusal (nil from SET NX, or
// the remaining TTL).
func ReadAcquire(reply resp.Value, _ int) (Outcome, int64, bool) {
	switch {
	case reply.IsOK():
		return Confirmed, 0, true
	case reply.Null:
		return Held, RefusalUnknown, true
	}
	return readRefusal(reply)
}

// ReadAcquireFenced reads AcquireFenced: the largest counter, or
// the remaining TTL of the keys that exist.
func ReadAcquireFenced(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeBulkString && !reply.Null {
		if counter, ok := ParseCounter(reply.Str); ok {
			return Confirmed, counter, true
		}
		return 0, 0, false
	}
	return readRefusal(reply)
}

// ReadAcquireFair reads AcquireFair as ReadAcquire does, and its
// refusal of a waiter that is not in the node's line (RefusalOutOfLine).
func ReadAcquireFair(reply resp.Value, keys int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger && reply.Int == RefusalOutOfLine {
		return Held, RefusalOutOfLine, true
	}
	return ReadAcquire(reply, keys)
}

// ReadAcquireFairFenced is ReadAcquireFair with fencing.
func ReadAcquireFairFenced(reply resp.Value, keys int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger && reply.Int == RefusalOutOfLine {
		return Held, RefusalOutOfLine, true
	}
	return ReadAcquireFenced(reply, keys)
}

// ReadAcquirePermit reads AcquirePermit and AcquirePermitFenced: the
// position of the key set, then its counter; or the refusal.
func ReadAcquirePermit(reply resp.Value, candidates int) (outcome Outcome, counter, position int64, ok bool) {
	if reply.Type != resp.TypeBulkString || reply.Null {
		outcome, refusal, ok := readRefusal(reply)
		return outcome, refusal, 0, ok
	}
	text := reply.Str
	if space := bytes.IndexByte(text, ' '); space >= 0 {
		if counter, ok = ParseCounter(text[space+1:]); !ok {
			return 0, 0, 0, false
		}
		text = text[:space]
	}
	if position, ok = ParseCounter(text); !ok || position >= int64(candidates) {
		return 0, 0, 0, false
	}
	return Confirmed, counter, position, true
}

// RefusalUnknown is a refusal of unknown length: a key without a TTL, or
// SET NX.
const RefusalUnknown = -1

// RefusalOutOfLine is a fair lock's refusal of a waiter not in the node's
// line. Its heartbeat lapsed, or it was served in a failed attempt.
const RefusalOutOfLine = -2

// readRefusal reads a refusal in milliseconds, or RefusalUnknown.
func readRefusal(reply resp.Value) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger && reply.Int >= RefusalUnknown {
		return Held, reply.Int, true
	}
	return 0, 0, false
}

// ReadCommitFence reads CommitFence.
func ReadCommitFence(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger {
		switch reply.Int {
		case 1:
			return Confirmed, 0, true
		case 0:
			return Missing, 0, true
		}
	}
	return 0, 0, false
}

// ReadRelease reads Release: confirmed when the node deleted every key.
func ReadRelease(reply resp.Value, keys int) (Outcome, int64, bool) {
	switch {
	case reply.Type != resp.TypeInteger || reply.Int < 0 || reply.Int > int64(keys):
		return 0, 0, false
	case reply.Int == int64(keys):
		return Confirmed, 0, true
	}
	return Missing, 0, true
}

// ReadExtend reads Extend.
func ReadExtend(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger {
		switch reply.Int {
		case ExtendExtended:
			return Confirmed, 0, true
		case ExtendMissing:
			return Missing, 0, true
		case ExtendHeld:
			return Held, 0, true
		}
	}
	return 0, 0, false
}

// ReadRepair reads Repair, when a round gathers its reply anyway.
func ReadRepair(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger {
		switch reply.Int {
		case 1:
			return Confirmed, 0, true
		case -1:
			return Held, 0, true
		}
	}
	return 0, 0, false
}

// ReadCheck reads Check: the smallest remaining TTL of the keys, or
// why the node does not hold them.
func ReadCheck(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type != resp.TypeInteger {
		return 0, 0, false
	}
	switch reply.Int {
	case CheckHeld:
		return Held, 0, true
	case CheckMissing, CheckPersistent:
		return Missing, 0, true
	}
	if reply.Int < 0 {
		return 0, 0, false
	}
	return Confirmed, reply.Int, true
}

// ReadTicket reads FairTicket: the node's ticket counter.
func ReadTicket(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger && reply.Int >= 0 {
		return Confirmed, reply.Int, true
	}
	return 0, 0, false
}

// ReadOne reads a fair queue script's 1 (done) or 0 (nothing to do).
func ReadOne(reply resp.Value, _ int) (Outcome, int64, bool) {
	if reply.Type == resp.TypeInteger && (reply.Int == 0 || reply.Int == 1) {
		return Confirmed, reply.Int, true
	}
	return 0, 0, false
}

// ParseCounter parses a fencing counter: a decimal integer without sign or
// leading zeros, from 0 to math.MaxInt64−1. It does not allocate.
func ParseCounter(text []byte) (int64, bool) {
	if len(text) == 0 || len(text) > 19 || (text[0] == '0' && len(text) > 1) {
		return 0, false
	}
	var n uint64
	for _, c := range text {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0') // 19 digits fit a uint64
	}
	if n >= math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}
