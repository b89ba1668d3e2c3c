package round

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/redlock/internal/protocol"
)

// A waiter joins the line again only when the nodes that still have its
// place cannot serve it: some node said it is not in its line, and fewer
// than a quorum said it is. A node that timed out says nothing.
func TestFairLockWaiterRejoinsWhenNoQuorumKeepsItsPlace(t *testing.T) {
	lost := NodeOutcome{Outcome: OutcomeHeld, Number: protocol.RefusalOutOfLine}
	kept := NodeOutcome{Outcome: OutcomeHeld, Number: 250}
	keptUnknown := NodeOutcome{Outcome: OutcomeHeld, Number: protocol.RefusalUnknown}
	served := NodeOutcome{Outcome: OutcomeConfirmed}
	timedOut := NodeOutcome{Outcome: OutcomeTimeout}
	tests := []struct {
		name  string
		nodes []NodeOutcome
		want  bool
	}{
		{name: "every node dropped it", nodes: []NodeOutcome{lost, lost, lost}, want: true},
		{name: "a quorum keeps it", nodes: []NodeOutcome{lost, kept, keptUnknown}},
		{name: "one node keeps it, one timed out", nodes: []NodeOutcome{lost, kept, timedOut}, want: true},
		{name: "served by one node, dropped by another", nodes: []NodeOutcome{served, lost, kept}, want: true},
		{name: "no node dropped it", nodes: []NodeOutcome{kept, timedOut, timedOut}},
		{name: "every node keeps it", nodes: []NodeOutcome{kept, kept, kept}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			tally := &Tally{Need: 2, Nodes: test.nodes}
			assert.Equal(t, test.want, tally.LostPlace())
		})
	}
}
