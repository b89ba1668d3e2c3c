package redlock

import (
	"testing"

	"github.com/lockmux/lockmux/redlock/internal/protocol"
)

// The replies' outcomes convert to the users' Outcome by value.
func TestRepliesOutcomesAreTheUsersOutcomes(t *testing.T) {
	for reply, user := range map[protocol.Outcome]Outcome{
		protocol.Confirmed: OutcomeConfirmed,
		protocol.Held:      OutcomeHeld,
		protocol.Missing:   OutcomeMissing,
	} {
		if Outcome(reply) != user {
			t.Errorf("protocol's outcome %d is %v, want %v", reply, Outcome(reply), user)
		}
	}
}
