package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

// status --semaphore shows each permit: held by a quorum, with the
// holder's token, or not; and exits with 0 only when every permit is held.
func TestStatusShowsTheSemaphoresPermits(t *testing.T) {
	servers, addresses := startNodes(t, 3, redistest.Options{})
	for i := range 2 {
		require.Equal(t, "OK", servers[i].Do(t, "SET", "exports:permit:1", "aaaaaaaa-first", "PX", "60000"))
	}
	require.Equal(t, "OK", servers[2].Do(t, "SET", "exports:permit:0", "bbbbbbbb-minority", "PX", "60000"))
	variables := map[string]string{addressesVariable: addresses}

	result := invoke(t, variables, "status", "--semaphore", "3", "exports")
	assert.Equal(t, exitFailed, result.status, result.stderr)
	lines := strings.Split(strings.TrimSpace(result.stdout), "\n")
	require.Len(t, lines, 5, result.stdout)
	assert.Regexp(t, `^PERMIT\s+HELD\s+TOKEN\s+NODES$`, lines[0])
	assert.Regexp(t, `^exports:permit:0\s+no\s+-\s+1 of 3$`, lines[1], "one node is not a quorum")
	assert.Regexp(t, `^exports:permit:1\s+yes\s+aaaaaaaa\s+2 of 3$`, lines[2])
	assert.Regexp(t, `^exports:permit:2\s+no\s+-\s+0 of 3$`, lines[3])
	assert.Equal(t, `"exports": 1 of 3 permits held`, lines[4])

	for _, slot := range []string{"0", "2"} {
		for i := range 2 {
			servers[i].Do(t, "SET", "exports:permit:"+slot, "cccccccc-more", "PX", "60000")
		}
	}
	full := invoke(t, variables, "status", "--semaphore", "3", "exports")
	assert.Equal(t, exitOK, full.status, full.stdout)
	assert.Contains(t, full.stdout, `"exports": 3 of 3 permits held`)
}

// status --rw shows a read/write lock's writer and its live readers per
// node, and whether it is read, written or free.
func TestStatusShowsAReadWriteLock(t *testing.T) {
	servers, addresses := startNodes(t, 3, redistest.Options{})
	variables := map[string]string{addressesVariable: addresses}
	future := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	past := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
	for i, server := range servers {
		server.Do(t, "ZADD", "catalog:readers", future, "aaaaaaaa-reader", past, "bbbbbbbb-expired")
		if i < 1 {
			server.Do(t, "ZADD", "catalog:readers", future, "cccccccc-minority")
		}
	}
	read := invoke(t, variables, "status", "--rw", "catalog")
	assert.Equal(t, exitOK, read.status, read.stderr)
	lines := strings.Split(strings.TrimSpace(read.stdout), "\n")
	require.Len(t, lines, 5, read.stdout)
	assert.Regexp(t, `^NODE\s+WRITER\s+TOKEN\s+READERS$`, lines[0])
	assert.Regexp(t, `^`+servers[0].Addr()+`\s+no\s+-\s+2$`, lines[1], "live entries only")
	assert.Regexp(t, `^`+servers[1].Addr()+`\s+no\s+-\s+1$`, lines[2])
	assert.Equal(t, `"catalog" is read: 1 read holds, each on a quorum of 2 nodes`, lines[4])

	for _, server := range servers {
		server.Do(t, "DEL", "catalog:readers")
		server.Do(t, "SET", "catalog", "dddddddd-writer", "PX", "60000")
	}
	written := invoke(t, variables, "status", "--rw", "catalog")
	assert.Equal(t, exitOK, written.status)
	assert.Contains(t, written.stdout, `"catalog" is written: token dddddddd… on 3 of 3 nodes (quorum 2)`)

	for _, server := range servers {
		server.Do(t, "DEL", "catalog")
	}
	free := invoke(t, variables, "status", "--rw", "catalog")
	assert.Equal(t, exitFailed, free.status)
	assert.Contains(t, free.stdout, `"catalog" is free: nobody reads or writes it`)
}

func TestStatusOnAKnownState(t *testing.T) {
	servers, addresses := startUntrustedNodes(t, 5, redistest.Options{})
	for i, token := range []string{"aaaaaaaa-first", "aaaaaaaa-first", "aaaaaaaa-first", "bbbbbbbb-second"} {
		require.Equal(t, "OK", servers[i].Do(t, "SET", "held", token, "PX", "60000"))
	}
	for i, token := range []string{"cccccccc-third", "cccccccc-third", "dddddddd-fourth", "dddddddd-fourth"} {
		require.Equal(t, "OK", servers[i].Do(t, "SET", "split", token, "PX", "60000"))
	}
	variables := map[string]string{addressesVariable: addresses}

	t.Run("held by a quorum", func(t *testing.T) {
		result := invoke(t, variables, "status", "held")
		assert.Equal(t, exitOK, result.status, result.stderr)
		assert.Contains(t, result.stdout, `"held" is locked: token aaaaaaaa… on 3 of 5 nodes (quorum 3)`)
		lines := strings.Split(strings.TrimSpace(result.stdout), "\n")
		require.Len(t, lines, 7, result.stdout)
		assert.Regexp(t, `^NODE\s+HELD\s+TOKEN\s+TTL\s+FENCE$`, lines[0])
		assert.Regexp(t, `^`+servers[0].Addr()+`\s+yes\s+aaaaaaaa\s+(\d+m)?\d+(\.\d+)?s\s+-$`, lines[1])
		assert.Regexp(t, `^`+servers[3].Addr()+`\s+yes\s+bbbbbbbb\s`, lines[4])
		assert.Regexp(t, `^`+servers[4].Addr()+`\s+no\s+-\s+-\s+-$`, lines[5])
	})
	t.Run("held with metadata", func(t *testing.T) {
		for i := range 3 {
			require.Equal(t, "OK", servers[i].Do(t, "SET", "described", "eeeeeeee-fifth host-1 pid 42", "PX", "60000"))
		}
		result := invoke(t, variables, "status", "described")
		assert.Equal(t, exitOK, result.status, result.stderr)
		assert.Contains(t, result.stdout, `"described" is locked: token eeeeeeee… on 3 of 5 nodes (quorum 3), metadata "host-1 pid 42"`)
	})
	t.Run("a fair lock with waiters in line", func(t *testing.T) {
		future := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
		past := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
		for _, server := range servers {
			server.Do(t, "ZADD", "held:queue", "1", "waiter-1", "2", "waiter-2", "3", "gone")
			server.Do(t, "ZADD", "held:alive", future, "waiter-1", future, "waiter-2", past, "gone")
		}
		result := invoke(t, variables, "status", "held")
		assert.Equal(t, exitOK, result.status, result.stderr)
		assert.Contains(t, result.stdout, "2 waiting in line (a fair lock)\n", "live heartbeats only")
	})
	t.Run("free", func(t *testing.T) {
		result := invoke(t, variables, "status", "free")
		assert.Equal(t, exitFailed, result.status)
		assert.Contains(t, result.stdout, `"free" is free: no node holds it`)
	})
	t.Run("split", func(t *testing.T) {
		result := invoke(t, variables, "status", "split")
		assert.Equal(t, exitFailed, result.status)
		assert.Contains(t, result.stdout, "on 2 of 5 nodes, short of the quorum 3")
	})
	t.Run("too few nodes answer", func(t *testing.T) {
		down := strings.Join([]string{servers[0].Addr(), servers[1].Addr(), redistest.ClosedAddress(t), redistest.ClosedAddress(t), redistest.ClosedAddress(t)}, ",")
		result := invoke(t, map[string]string{addressesVariable: down}, "status", "held")
		assert.Equal(t, exitUnavailable, result.status)
		assert.Contains(t, result.stdout, "only 2 of 5 nodes answered")
		assert.Contains(t, result.stdout, "error: ")
		assert.Contains(t, result.stdout, "connection refused", "the error says the cause")
	})
}

func TestScanOnAKnownState(t *testing.T) {
	servers, addresses := startNodes(t, 3, redistest.Options{})
	require.Equal(t, "OK", servers[0].Do(t, "SET", "locks:a", "token", "PX", "60000"))
	require.Equal(t, "OK", servers[1].Do(t, "SET", "locks:a", "token", "PX", "60000"))
	require.Equal(t, "OK", servers[1].Do(t, "SET", "locks:a:lockmux-fence", "7"))
	require.Equal(t, "OK", servers[2].Do(t, "SET", "locks:stuck", "token"))
	require.Equal(t, "OK", servers[2].Do(t, "SET", "other", "value"))
	variables := map[string]string{addressesVariable: addresses}

	t.Run("a leak", func(t *testing.T) {
		result := invoke(t, variables, "scan", "--match", "locks:*")
		assert.Equal(t, exitFailed, result.status, result.stderr)
		assert.Contains(t, result.stdout, servers[0].Addr()+`: 1 key matching "locks:*", 0 without a TTL`)
		assert.Contains(t, result.stdout, servers[1].Addr()+`: 2 keys matching "locks:*", 0 without a TTL`)
		assert.Regexp(t, `locks:a:lockmux-fence\s+fencing counter`, result.stdout)
		assert.Regexp(t, `locks:stuck\s+NO TTL: a leak`, result.stdout)
		assert.NotContains(t, result.stdout, "other")
		assert.Contains(t, result.stdout, "1 key without a TTL")
	})
	t.Run("no leak", func(t *testing.T) {
		result := invoke(t, variables, "scan", "--match", "locks:a*")
		assert.Equal(t, exitOK, result.status)
		assert.Contains(t, result.stdout, "no key without a TTL")
	})
	t.Run("a node down", func(t *testing.T) {
		result := invoke(t, map[string]string{addressesVariable: addresses + "," + redistest.ClosedAddress(t)}, "scan", "--match", "locks:a*")
		assert.Equal(t, exitUnavailable, result.status)
		assert.Contains(t, result.stdout, "1 of 4 nodes could not be scanned completely")
	})
}

func TestDoctorCommand(t *testing.T) {
	redistest.RequireReal(t)
	servers, addresses := startNodes(t, 3, redistest.Options{})
	variables := map[string]string{addressesVariable: addresses}

	result := invoke(t, variables, "doctor")
	assert.Equal(t, exitOK, result.status, "warnings only: %s", result.stdout)
	assert.Regexp(t, `warn\s+persistence\s+appendonly no`, result.stdout)
	assert.Regexp(t, `ok\s+run_id\s+a distinct server`, result.stdout)
	assert.Contains(t, result.stdout, "3 nodes: ")

	result = invoke(t, variables, "doctor", "--strict")
	assert.Equal(t, exitFailed, result.status, "--strict fails on warnings")

	port := servers[0].Addr()[strings.LastIndexByte(servers[0].Addr(), ':')+1:]
	result = invoke(t, map[string]string{addressesVariable: servers[0].Addr() + ",localhost:" + port + "," + redistest.ClosedAddress(t)}, "doctor")
	assert.Equal(t, exitFailed, result.status)
	assert.Regexp(t, `fail\s+run_id\s+the same server`, result.stdout)
	assert.Regexp(t, `fail\s+reachable\s+cannot reach the node`, result.stdout)

	result = invoke(t, nil, "doctor", "--addrs", servers[0].Addr()+","+servers[1].Addr())
	assert.Contains(t, result.stdout, "note: 2 nodes tolerate no more failures than 1 would")
}

// redlock doctor names what a user lacks of the minimal ACL rule, with
// the rule that grants it, and --key-prefix places the probe among the
// keys the user may use.
func TestDoctorCommandChecksPermissions(t *testing.T) {
	redistest.RequireReal(t)
	rule := "~orders:* ~lockmux:epoch* resetchannels &lockmux:released:orders:* +set +evalsha +eval +script|load +get +del +pttl +pexpire +publish +subscribe +unsubscribe +client|tracking +info +time"
	_, addresses := startNodes(t, 1, redistest.Options{ACLUsers: []string{"locker on >pw " + rule, "noextend on >pw " + strings.Replace(rule, "+pexpire ", "", 1)}})

	result := invoke(t, nil, "doctor", "--addrs", "redis://locker:pw@"+addresses, "--key-prefix", "orders:")
	assert.Regexp(t, `ok\s+permissions\s+the user locker may run every command`, result.stdout)

	result = invoke(t, nil, "doctor", "--addrs", "redis://locker:pw@"+addresses)
	assert.Regexp(t, `warn\s+permissions\s+the user locker may not use the probe key lockmux-doctor:`, result.stdout)
	assert.Contains(t, result.stdout, "--key-prefix")

	result = invoke(t, nil, "doctor", "--addrs", "redis://noextend:pw@"+addresses, "--key-prefix", "orders:")
	assert.Equal(t, exitFailed, result.status)
	assert.Regexp(t, `fail\s+permissions\s+the user noextend lacks \+pexpire`, result.stdout)
	assert.Contains(t, result.stdout, "ACL SETUSER noextend +pexpire")
}

// unlock refuses without --force, and with it releases the key on every
// node whoever holds it, and says where.
func TestUnlockForceReleasesWhoeverHolds(t *testing.T) {
	servers, addresses := startNodes(t, 3, redistest.Options{})
	variables := map[string]string{addressesVariable: addresses}
	for _, server := range servers[:2] {
		server.Do(t, "SET", "stuck", "aaaaaaaa-gone", "PX", "600000")
	}
	refused := invoke(t, variables, "unlock", "stuck")
	assert.Equal(t, exitUsage, refused.status)
	assert.Contains(t, refused.stderr, "without --force")
	assert.Equal(t, "1", servers[0].Do(t, "EXISTS", "stuck"), "nothing released without --force")

	forced := invoke(t, variables, "unlock", "--force", "stuck")
	assert.Equal(t, exitOK, forced.status, forced.stderr)
	assert.Contains(t, forced.stdout, `"stuck" released on 2 nodes`)
	for _, server := range servers {
		assert.Equal(t, "0", server.Do(t, "EXISTS", "stuck"))
	}
	again := invoke(t, variables, "unlock", "--force", "stuck")
	assert.Equal(t, exitFailed, again.status)
	assert.Contains(t, again.stdout, "was not held")
}

// trust-nodes refuses without --force, and with it writes every node's
// epoch marker as old as the node.
func TestTrustNodesStatesTheNodesNew(t *testing.T) {
	redistest.RequireReal(t) // INFO in scripts
	servers, addresses := startUntrustedNodes(t, 3, redistest.Options{})
	variables := map[string]string{addressesVariable: addresses}
	refused := invoke(t, variables, "trust-nodes")
	assert.Equal(t, exitUsage, refused.status)
	assert.Contains(t, refused.stderr, "without --force")
	assert.Equal(t, "0", servers[0].Do(t, "EXISTS", "lockmux:epoch"))

	trusted := invoke(t, variables, "trust-nodes", "--force")
	assert.Equal(t, exitOK, trusted.status, trusted.stderr)
	for _, server := range servers {
		assert.Regexp(t, `^\w+ 0 \w+ \d+$`, server.Do(t, "GET", "lockmux:epoch"), "written as old as the node")
	}
}

// status shows the nodes' epoch markers once the clients use the
// quarantine (some node has one): their age, and which nodes have none of
// their server process.
func TestStatusShowsTheEpochMarkers(t *testing.T) {
	redistest.RequireReal(t) // INFO in scripts
	servers, addresses := startUntrustedNodes(t, 3, redistest.Options{})
	variables := map[string]string{addressesVariable: addresses}
	quiet := invoke(t, variables, "status", "k")
	assert.NotContains(t, quiet.stdout, "epoch marker", "no marker anywhere: nothing to say")

	trusted := invoke(t, variables, "trust-nodes", "--force")
	require.Equal(t, exitOK, trusted.status, trusted.stderr)
	servers[2].Do(t, "DEL", "lockmux:epoch")
	result := invoke(t, variables, "status", "k")
	assert.Contains(t, result.stdout, servers[0].Addr()+": epoch marker ")
	assert.Contains(t, result.stdout, servers[2].Addr()+": no epoch marker of this server process")
}
