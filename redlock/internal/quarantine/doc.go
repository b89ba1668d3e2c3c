// Package quarantine keeps out of the votes a node that may have lost keys,
// until every hold it could have lost ends (redlock.Options.Quarantine).
// Verify reads each node's epoch marker; Judge checks the reading that
// follows each vote. A Cluster node's masters keep a marker each.
//
// # Concurrency
//
// A Quarantine is safe for concurrent use: votes read atomics, and one
// mutex serialises Verify and Trust.
//
// # Errors
//
// Judge and Err wrap Config.Quarantined. Trust returns one error per node,
// wrapping Config.Unreachable or Config.UnexpectedReply, or the node's
// error reply. AskMasters returns the Group's errors.
package quarantine
