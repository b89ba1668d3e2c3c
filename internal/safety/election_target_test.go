//go:build linux

package safety_test

import (
	"context"
	"errors"

	"github.com/lockmux/lockmux/redlock"
)

// electionTarget campaigns in e with value: its holds are leaderships,
// renewed by the Election alone.
func electionTarget(e *redlock.Election, value string) target {
	campaign := func(ctx context.Context) (held, error) {
		l, err := e.Campaign(ctx, value)
		if err != nil {
			return nil, err
		}
		return leadershipHeld{Leadership: l, name: e.Name()}, nil
	}
	return target{name: e.Name(), takeMethod: "Campaign", tryMethod: "Campaign", take: campaign, try: campaign, renewedOnly: true}
}

// leadershipHeld is a leadership of an Election, held as a lock of the
// election's key whose fence is the term.
type leadershipHeld struct {
	*redlock.Leadership
	name string
}

func (h leadershipHeld) Key() string                       { return h.name }
func (h leadershipHeld) Token() string                     { return h.Value() }
func (h leadershipHeld) Fence() int64                      { return h.Term() }
func (h leadershipHeld) Release(ctx context.Context) error { return h.Resign(ctx) }

// Extend is not called: a leadership has no Extend (renewedOnly).
func (h leadershipHeld) Extend(context.Context) error {
	return errors.New("a leadership is renewed by its Election alone")
}
