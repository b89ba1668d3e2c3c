package doctor

import (
	"strconv"
	"time"
)

// Severity grades one finding of Run.
type Severity uint8

// The severities of a finding, from best to worst.
const (
	// SeverityOK means the check passed.
	SeverityOK Severity = iota
	// SeverityWarn means the node works, but a failure of the kind the
	// check looks at (a crash, memory pressure, a clock step) could break
	// mutual exclusion, or waiting Locks are not woken by releases; the
	// message says what to change. It is also the grade of a check that
	// could not be made (a command was refused).
	SeverityWarn
	// SeverityFail means the node cannot carry Redlock safely as it is
	// configured: it is unreachable, a replica, in cluster mode, the same
	// server as another address, or the user may not run the lock
	// commands on the lock keys.
	SeverityFail
)

// String returns "ok", "warn" or "fail".
func (s Severity) String() string {
	switch s {
	case SeverityOK:
		return "ok"
	case SeverityWarn:
		return "warn"
	case SeverityFail:
		return "fail"
	}
	return "severity(" + strconv.Itoa(int(s)) + ")"
}

// The names of the checks of Run, in the order a NodeReport lists them.
const (
	// CheckReachable is the check that the node answers.
	CheckReachable = "reachable"
	// CheckRole is the check that the node is a master, not a replica,
	// and has no replicas that could take over after a failover.
	CheckRole = "role"
	// CheckCluster is the check that a plain node is not in cluster mode,
	// and that a Redis Cluster member's state is ok, every slot served.
	CheckCluster = "cluster"
	// CheckSentinel, for a master that Redis Sentinel serves, is the check
	// that its sentinels answer, agree on where the master is, name the
	// server the client reached, and have their quorum (SENTINEL
	// CKQUORUM).
	CheckSentinel = "sentinel"
	// CheckRunID is the check that no other configured address reaches
	// the same server.
	CheckRunID = "run_id"
	// CheckPersistence is the check for appendonly yes with appendfsync always.
	CheckPersistence = "persistence"
	// CheckEviction is the check for maxmemory-policy noeviction.
	CheckEviction = "maxmemory-policy"
	// CheckUptime is the check that the node has run for longer than the
	// longest TTL, or persists every write.
	CheckUptime = "uptime"
	// CheckEpoch reads the node's epoch marker (redlock.Options.Quarantine):
	// missing, written by another server process, or how old it is, and
	// whether a client that quarantines would keep the node out of the
	// locks for the longest TTL. It only reads.
	CheckEpoch = "epoch"
	// CheckClock is the check that the node's clock agrees with the client's.
	CheckClock = "clock"
	// CheckNotifications is the check that the node can carry the release
	// notifications that wake waiting Locks: the client speaks RESP3 to it,
	// and the ACL lets the user subscribe to the release channels
	// ("lockmux:released:" followed by the key), and to unsubscribe.
	CheckNotifications = "notifications"
	// CheckPermissions is the check that the configured user has every
	// part of the minimal ACL rule of a lockmux user: the commands a
	// Client sends (naming them: SET, EVALSHA, EVAL, SCRIPT LOAD, INFO,
	// SUBSCRIBE, UNSUBSCRIBE) and those its scripts call (GET, SET, DEL,
	// PTTL, PEXPIRE, PUBLISH), the lock keys and their fencing counters
	// (the keys under Options.KeyPrefix), and the release channels. It
	// fails when a lock operation would fail, and warns when only fencing,
	// notifications or the detection of duplicate servers would; its
	// message names what is missing and the ACL SETUSER rule that grants
	// it.
	CheckPermissions = "permissions"
)

// Finding is the result of one check on one node.
type Finding struct {
	// Check is the name of the check, one of the Check constants.
	Check string
	// Severity grades the result.
	Severity Severity
	// Message says what was found and, unless the check passed, what to
	// change.
	Message string
}

// NodeReport holds the findings of Run for one node.
type NodeReport struct {
	// Address is the node's address as configured, without its password.
	Address string
	// Version is the server's redis_version, or "" when unknown.
	Version string
	// RunID is the server's run_id, or "" when unknown.
	RunID string
	// ClockOffset is how far the node's clock is ahead of the client's
	// (negative when behind), corrected for half the round trip; it is
	// meaningful only when ClockMeasured is set.
	ClockOffset time.Duration
	// ClockMeasured is set when the clock check read the node's clock
	// (TIME), so that ClockOffset was measured.
	ClockMeasured bool
	// Findings holds one entry per check that ran, in the order of the
	// Check constants. An unreachable node has only CheckReachable.
	Findings []Finding
}

// Severity returns the worst severity among the report's findings.
func (r NodeReport) Severity() Severity {
	worst := SeverityOK
	for _, finding := range r.Findings {
		worst = max(worst, finding.Severity)
	}
	return worst
}
