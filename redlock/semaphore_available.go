package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/redlock/internal/quarantine"
	"github.com/lockmux/lockmux/resp"
)

// permitsFreeLua reads which slots of a Semaphore are free on a node.
var permitsFreeLua = protocol.PermitsFree

// Available returns how many permits are free on a quorum of nodes now,
// in one round that writes nothing; quarantined nodes do not count. It
// fails with ErrQuorumUnreachable when too few nodes answered, or with
// ctx's error.
func (s *Semaphore) Available(ctx context.Context) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	c := s.waiter.client
	if err := c.usable(); err != nil {
		return 0, err
	}
	if c.quarantine != nil {
		c.quarantine.Verify(ctx)
	}
	round := c.group.NewRound()
	round.SetScript(permitsFreeLua, len(s.slots), 0)
	for _, slot := range s.slots {
		round.AppendString(slot.key)
	}
	count := &freeSlots{free: make([]int, len(s.slots)), quarantine: c.quarantine, addresses: c.addresses}
	c.group.Send(round, c.roundDeadline())
	if err := c.group.Wait(ctx, round, count); err != nil {
		return 0, fmt.Errorf("redlock: semaphore %q: %w", s.name, context.Cause(ctx))
	}
	if count.answered < c.need {
		return 0, fmt.Errorf("redlock: semaphore %q: %d of %d nodes answered, need %d: %w: %w",
			s.name, count.answered, len(c.addresses), c.need, ErrQuorumUnreachable, errors.Join(count.errs...))
	}
	available := 0
	for _, nodes := range count.free {
		if nodes >= c.need {
			available++
		}
	}
	return available, nil
}

// freeSlots counts, per slot, the nodes where it is free.
type freeSlots struct {
	free       []int
	answered   int
	errs       []error
	quarantine *quarantine.Quarantine
	addresses  []string
}

// Count implements mux.Tally. It waits for every node.
func (f *freeSlots) Count(node int, round *mux.Round) bool {
	reply := round.Reply(node)
	switch {
	case round.Err(node) != nil:
		f.errs = append(f.errs, fmt.Errorf("%s: %w: %w", f.addresses[node], ErrNodeUnreachable, round.Err(node)))
		return false
	case reply.IsError():
		f.errs = append(f.errs, fmt.Errorf("%s: %w", f.addresses[node], reply.Err()))
		return false
	case reply.Type != resp.TypeBulkString || len(reply.Str) != len(f.free) || !onlyZerosAndOnes(reply.Str):
		f.errs = append(f.errs, fmt.Errorf("%s: %w to a read of the slots: %s", f.addresses[node], errUnexpectedReply, reply))
		return false
	}
	if f.quarantine != nil {
		if excluded, left := f.quarantine.Excludes(node, round.Server(node)); excluded {
			f.errs = append(f.errs, fmt.Errorf("%s: %w", f.addresses[node], f.quarantine.Err(node, left)))
			return false
		}
	}
	for slot, held := range reply.Str {
		if held == '0' {
			f.free[slot]++
		}
	}
	f.answered++
	return false
}

// onlyZerosAndOnes reports whether text holds only '0' and '1'.
func onlyZerosAndOnes(text []byte) bool {
	for _, character := range text {
		if character != '0' && character != '1' {
			return false
		}
	}
	return true
}
