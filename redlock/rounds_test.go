package redlock

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/redlock/internal/round"
)

// The round's outcomes and operations are redlock's, by number: a tally's
// node converts to a NodeResult by a plain conversion.
func TestRoundNumbersOutcomesAndOperationsAsRedlock(t *testing.T) {
	outcomes := map[round.Outcome]Outcome{
		round.OutcomeConfirmed: OutcomeConfirmed, round.OutcomeHeld: OutcomeHeld, round.OutcomeMissing: OutcomeMissing,
		round.OutcomeError: OutcomeError, round.OutcomeTimeout: OutcomeTimeout, round.OutcomeNotSent: OutcomeNotSent,
		round.OutcomeQuarantined: OutcomeQuarantined,
	}
	for theirs, ours := range outcomes {
		assert.Equal(t, ours, Outcome(theirs))
	}
	operations := map[round.Operation]Operation{
		round.OperationLock: OperationLock, round.OperationExtend: OperationExtend,
		round.OperationUnlock: OperationUnlock, round.OperationResume: OperationResume,
	}
	for theirs, ours := range operations {
		assert.Equal(t, ours, Operation(theirs))
		assert.Equal(t, ours.String(), theirs.String())
	}
}
