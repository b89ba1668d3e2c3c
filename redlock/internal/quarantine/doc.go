// Package quarantine is the lock package's quarantine
// (redlock.Options.Quarantine): it keeps out of the locks the votes of a
// node that may have lost keys, until every hold it could have lost ends.
//
// A Quarantine holds one verdict per node, read from the node's epoch
// marker (scripts/epoch.lua) by Verify, and judges each vote by the
// reading of the marker that follows it (scripts/marker.lua, Judge). A
// Redis Cluster node's masters each keep a marker of their own
// (AskMasters); the doctor and the inspector read the markers too
// (AgeScript, Youngest).
//
// # Concurrency
//
// A Quarantine is safe for concurrent use. Its verdicts are atomics, read
// by every vote without a lock; one mutex lets one verification or Trust
// run at a time.
//
// # Errors
//
// Judge and Err wrap Config.Quarantined. Trust returns one error per node,
// wrapping Config.Unreachable or Config.UnexpectedReply, or the node's
// error reply. AskMasters returns the Group's errors.
package quarantine
