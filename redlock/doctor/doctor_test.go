package doctor_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/doctor"
	"github.com/lockmux/lockmux/resp"
)

// doctorContext bounds one Run of a test.
func doctorContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// findingOf returns the finding of check in report, failing the test when
// there is none.
func findingOf(t *testing.T, report doctor.NodeReport, check string) doctor.Finding {
	t.Helper()
	for _, finding := range report.Findings {
		if finding.Check == check {
			return finding
		}
	}
	require.Failf(t, "no finding", "check %q missing from %+v", check, report.Findings)
	return doctor.Finding{}
}

func TestDoctorDefaultServerWarnsAboutPersistence(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	reports, err := doctor.Run(doctorContext(t), []string{server.Addr()}, redlock.Options{}, doctor.Options{})
	require.NoError(t, err)
	require.Len(t, reports, 1)
	report := reports[0]
	assert.Equal(t, server.Addr(), report.Address)
	assert.NotEmpty(t, report.RunID)
	assert.NotEmpty(t, report.Version)

	var checks []string
	for _, finding := range report.Findings {
		checks = append(checks, finding.Check)
	}
	assert.Equal(t, []string{doctor.CheckReachable, doctor.CheckRole, doctor.CheckCluster, doctor.CheckRunID,
		doctor.CheckPersistence, doctor.CheckEviction, doctor.CheckUptime, doctor.CheckEpoch, doctor.CheckClock, doctor.CheckNotifications,
		doctor.CheckPermissions}, checks)
	for _, check := range []string{doctor.CheckReachable, doctor.CheckRole, doctor.CheckCluster, doctor.CheckRunID,
		doctor.CheckEviction, doctor.CheckClock, doctor.CheckNotifications, doctor.CheckPermissions} {
		assert.Equal(t, doctor.SeverityOK, findingOf(t, report, check).Severity, "%s: %s", check, findingOf(t, report, check).Message)
	}
	persistence := findingOf(t, report, doctor.CheckPersistence)
	assert.Equal(t, doctor.SeverityWarn, persistence.Severity)
	assert.Contains(t, persistence.Message, "appendonly no")
	assert.Contains(t, persistence.Message, "set appendonly yes and appendfsync always")
	uptime := findingOf(t, report, doctor.CheckUptime)
	assert.Equal(t, doctor.SeverityWarn, uptime.Severity, "a server started just now without persistence: %s", uptime.Message)
	assert.Equal(t, doctor.SeverityWarn, report.Severity())
	assert.Less(t, report.ClockOffset.Abs(), doctor.DefaultMaxClockOffset, "the same host's clock")
}

func TestDoctorSafeServerPasses(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{ExtraArgs: []string{
		"--appendonly", "yes", "--appendfsync", "always", "--maxmemory-policy", "noeviction"}})
	trusting, err := redlock.New([]string{server.Addr()}, redlock.Options{})
	require.NoError(t, err)
	require.NoError(t, trusting.TrustNodes(doctorContext(t)), "a new server, stated new for the quarantine")
	trusting.Close()
	reports, err := doctor.Run(doctorContext(t), []string{server.Addr()}, redlock.Options{}, doctor.Options{LongestTTL: time.Hour})
	require.NoError(t, err)
	require.Len(t, reports, 1)
	for _, finding := range reports[0].Findings {
		assert.Equal(t, doctor.SeverityOK, finding.Severity, "%s: %s", finding.Check, finding.Message)
	}
	assert.Contains(t, findingOf(t, reports[0], doctor.CheckUptime).Message, "appendfsync always kept its locks")
	assert.Equal(t, doctor.SeverityOK, reports[0].Severity())
}

func TestDoctorReplicaFails(t *testing.T) {
	redistest.RequireReal(t)
	servers := redistest.StartN(t, 2, redistest.Options{})
	master, replica := servers[0], servers[1]
	require.Equal(t, "OK", replica.Do(t, "REPLICAOF", "127.0.0.1", strconv.Itoa(master.Port())))

	reports, err := doctor.Run(doctorContext(t), []string{master.Addr(), replica.Addr()}, redlock.Options{}, doctor.Options{})
	require.NoError(t, err)
	role := findingOf(t, reports[1], doctor.CheckRole)
	assert.Equal(t, doctor.SeverityFail, role.Severity)
	assert.Contains(t, role.Message, "a replica of 127.0.0.1:"+strconv.Itoa(master.Port()))
	assert.Equal(t, doctor.SeverityFail, reports[1].Severity())
	assert.NotEqual(t, doctor.SeverityFail, findingOf(t, reports[0], doctor.CheckRole).Severity, "the master itself is a master")
}

func TestDoctorDuplicateAddressFails(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	if !server.IsReal() {
		t.Skip("miniredis reports no run_id")
	}
	port := strconv.Itoa(server.Port())
	client, err := redlock.New([]string{server.Addr(), "localhost:" + port}, redlock.Options{})
	require.NoError(t, err)
	err = client.NewMutex("k", redlock.MutexOptions{}).Lock(context.Background())
	require.ErrorIs(t, err, redlock.ErrDuplicateNode, "the client refuses what Run must still explain")
	client.Close()

	tests := []struct {
		name      string
		addresses []string
		names     string
	}{
		{name: "another name", addresses: []string{server.Addr(), "localhost:" + port}, names: server.Addr() + " and localhost:" + port},
		{name: "the same address twice", addresses: []string{server.Addr(), "redis://" + server.Addr()}, names: server.Addr() + " and " + server.Addr()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reports, err := doctor.Run(doctorContext(t), tt.addresses, redlock.Options{}, doctor.Options{})
			require.NoError(t, err)
			require.Len(t, reports, 2)
			for _, report := range reports {
				runID := findingOf(t, report, doctor.CheckRunID)
				assert.Equal(t, doctor.SeverityFail, runID.Severity)
				assert.Contains(t, runID.Message, tt.names)
				assert.Contains(t, runID.Message, "count more than once in a quorum")
				assert.Equal(t, doctor.SeverityFail, report.Severity())
			}
		})
	}
}

func TestDoctorUnreachableNodeFails(t *testing.T) {
	address := redistest.ClosedAddress(t)

	reports, err := doctor.Run(doctorContext(t), []string{address}, redlock.Options{DialTimeout: time.Second}, doctor.Options{})
	require.NoError(t, err)
	require.Len(t, reports, 1)
	require.Len(t, reports[0].Findings, 1)
	finding := reports[0].Findings[0]
	assert.Equal(t, doctor.CheckReachable, finding.Check)
	assert.Equal(t, doctor.SeverityFail, finding.Severity)
	assert.Contains(t, finding.Message, "cannot reach the node")
	assert.Contains(t, finding.Message, address, "the error names the node")
}

func TestDoctorOptionsAreValidated(t *testing.T) {
	tests := []struct {
		name    string
		options doctor.Options
	}{
		{name: "negative longest TTL", options: doctor.Options{LongestTTL: -time.Second}},
		{name: "negative clock offset", options: doctor.Options{MaxClockOffset: -time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := doctor.Run(context.Background(), []string{"127.0.0.1:1"}, redlock.Options{}, tt.options)
			assert.ErrorIs(t, err, redlock.ErrInvalidOptions)
		})
	}
	_, err := doctor.Run(context.Background(), nil, redlock.Options{}, doctor.Options{})
	assert.ErrorIs(t, err, redlock.ErrInvalidOptions)
	_, err = doctor.Run(context.Background(), []string{"127.0.0.1:1"}, redlock.Options{Protocol: 7}, doctor.Options{})
	assert.ErrorIs(t, err, redlock.ErrInvalidOptions, "the client options are checked as redlock.New checks them")
	_, err = doctor.Run(context.Background(), []string{"redis://[::1"}, redlock.Options{}, doctor.Options{})
	assert.ErrorIs(t, err, redlock.ErrInvalidOptions, "an address that does not parse")
}

// A cancellation ends Run at once, with an error that matches
// context.Canceled and the reports found so far, even when the nodes
// accept connections and answer nothing.
func TestCancellationEndsRunPromptly(t *testing.T) {
	redistest.RequireReal(t)
	servers := redistest.StartN(t, 3, redistest.Options{})
	addresses := make([]string, len(servers))
	for i, server := range servers {
		addresses[i] = server.Addr()
		server.Stop()
	}
	defer func() {
		for _, server := range servers {
			server.Cont()
		}
	}()

	cancelled, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(20*time.Millisecond, cancel)
	defer timer.Stop()
	started := time.Now()
	reports, err := doctor.Run(cancelled, addresses, redlock.Options{DialTimeout: 3 * time.Second}, doctor.Options{})
	elapsed := time.Since(started)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Len(t, reports, len(addresses))
	assert.Less(t, elapsed, time.Second, "a cancelled Run must not wait for the 3 s dial timeout")
}

// fakeNode describes what a scripted server answers to Run.
type fakeNode struct {
	info        string        // the INFO text
	config      string        // "" answers CONFIG with NOPERM
	clockOffset time.Duration // added to the real time in TIME
	timeRefused bool          // TIME answers NOPERM
}

// start runs the scripted server and returns its address.
func (f fakeNode) start(t *testing.T) string {
	fake := redistest.NewFake(t, func(command []string) []byte {
		switch strings.ToUpper(command[0]) {
		case "HELLO":
			return []byte("-ERR unknown command 'HELLO'\r\n")
		case "CLIENT":
			return []byte("+OK\r\n")
		case "INFO":
			return resp.AppendValue(nil, resp.Value{Type: resp.TypeBulkString, Str: []byte(f.info)})
		case "CONFIG":
			if f.config == "" {
				return []byte("-NOPERM this user has no permissions to run the 'config|get' command\r\n")
			}
			return resp.AppendCommand(nil, command[2], f.config)
		case "TIME":
			if f.timeRefused {
				return []byte("-NOPERM this user has no permissions to run the 'time' command\r\n")
			}
			now := time.Now().Add(f.clockOffset)
			return resp.AppendCommand(nil, strconv.FormatInt(now.Unix(), 10), strconv.Itoa(now.Nanosecond()/1000))
		}
		return []byte("-ERR unexpected command\r\n")
	})
	return fake.Addr()
}

// fakeInfo returns an INFO text with the given fields over sane defaults.
func fakeInfo(fields map[string]string) string {
	defaults := map[string]string{
		"redis_version": "7.2.0", "run_id": "0123456789abcdef0123456789abcdef01234567", "uptime_in_seconds": "86400",
		"role": "master", "connected_slaves": "0", "cluster_enabled": "0", "aof_enabled": "1",
		"maxmemory": "0", "maxmemory_policy": "noeviction",
	}
	var text strings.Builder
	text.WriteString("# Server\r\n")
	for name, value := range defaults {
		if override, found := fields[name]; found {
			value = override
		}
		if value != "" {
			text.WriteString(name + ":" + value + "\r\n")
		}
	}
	return text.String()
}

func TestDoctorFindingsOnScriptedNodes(t *testing.T) {
	tests := []struct {
		name     string
		node     fakeNode
		check    string
		severity doctor.Severity
		message  string
	}{
		{name: "safe", node: fakeNode{info: fakeInfo(nil), config: "always"},
			check: doctor.CheckPersistence, severity: doctor.SeverityOK, message: "appendfsync always"},
		{name: "fsync every second", node: fakeNode{info: fakeInfo(nil), config: "everysec"},
			check: doctor.CheckPersistence, severity: doctor.SeverityWarn, message: "appendfsync everysec"},
		{name: "CONFIG refused", node: fakeNode{info: fakeInfo(nil)},
			check: doctor.CheckPersistence, severity: doctor.SeverityWarn, message: "NOPERM"},
		{name: "cluster mode", node: fakeNode{info: fakeInfo(map[string]string{"cluster_enabled": "1"}), config: "always"},
			check: doctor.CheckCluster, severity: doctor.SeverityFail, message: "give the cluster as redis-cluster://host:port"},
		{name: "master with replicas", node: fakeNode{info: fakeInfo(map[string]string{"connected_slaves": "2"}), config: "always"},
			check: doctor.CheckRole, severity: doctor.SeverityWarn, message: "2 replica(s)"},
		{name: "eviction", node: fakeNode{info: fakeInfo(map[string]string{"maxmemory_policy": "allkeys-lru"}), config: "always"},
			check: doctor.CheckEviction, severity: doctor.SeverityWarn, message: "set maxmemory-policy noeviction"},
		{name: "eviction unknown", node: fakeNode{info: fakeInfo(map[string]string{"maxmemory_policy": ""})},
			check: doctor.CheckEviction, severity: doctor.SeverityWarn, message: "cannot read maxmemory-policy"},
		{name: "recent restart", node: fakeNode{info: fakeInfo(map[string]string{"uptime_in_seconds": "3", "aof_enabled": "0"})},
			check: doctor.CheckUptime, severity: doctor.SeverityWarn, message: "wait 7s"},
		{name: "clock ahead", node: fakeNode{info: fakeInfo(nil), config: "always", clockOffset: 3 * time.Second},
			check: doctor.CheckClock, severity: doctor.SeverityWarn, message: "ahead of this host's"},
		{name: "clock behind", node: fakeNode{info: fakeInfo(nil), config: "always", clockOffset: -3 * time.Second},
			check: doctor.CheckClock, severity: doctor.SeverityWarn, message: "behind this host's"},
		{name: "clock close", node: fakeNode{info: fakeInfo(nil), config: "always"},
			check: doctor.CheckClock, severity: doctor.SeverityOK, message: "this host's"},
		{name: "no run_id", node: fakeNode{info: fakeInfo(map[string]string{"run_id": ""}), config: "always"},
			check: doctor.CheckRunID, severity: doctor.SeverityWarn, message: "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			address := tt.node.start(t)
			reports, err := doctor.Run(doctorContext(t), []string{address}, redlock.Options{}, doctor.Options{})
			require.NoError(t, err)
			finding := findingOf(t, reports[0], tt.check)
			assert.Equal(t, tt.severity, finding.Severity, finding.Message)
			assert.Contains(t, finding.Message, tt.message)
		})
	}
}

// A report says whether the node's clock was read, so that a clock
// offset of zero is never taken for a measurement.
func TestDoctorReportsWhetherTheClockWasMeasured(t *testing.T) {
	ahead := fakeNode{info: fakeInfo(nil), config: "always", clockOffset: time.Hour}.start(t)
	refused := fakeNode{info: fakeInfo(map[string]string{"run_id": "1123456789abcdef0123456789abcdef01234567"}), config: "always",
		timeRefused: true}.start(t)
	reports, err := doctor.Run(doctorContext(t), []string{ahead, refused}, redlock.Options{}, doctor.Options{})
	require.NoError(t, err)
	require.Len(t, reports, 2)
	assert.True(t, reports[0].ClockMeasured)
	assert.InDelta(t, time.Hour.Seconds(), reports[0].ClockOffset.Seconds(), 5, "an hour ahead, give or take a loaded machine")
	assert.False(t, reports[1].ClockMeasured, findingOf(t, reports[1], doctor.CheckClock).Message)
	assert.Contains(t, findingOf(t, reports[1], doctor.CheckClock).Message, "TIME was refused")
}

func TestSeverityString(t *testing.T) {
	assert.Equal(t, "ok", doctor.SeverityOK.String())
	assert.Equal(t, "warn", doctor.SeverityWarn.String())
	assert.Equal(t, "fail", doctor.SeverityFail.String())
}

// Run tells whether a node can carry the release notifications that
// wake waiters, and how to fix it when it cannot: the ACL channel rule for
// a user who may not use the release channels, and the command for one who
// may not subscribe or unsubscribe.
func TestDoctorChecksNotifications(t *testing.T) {
	redistest.RequireReal(t)
	locker := redlock.Options{Username: "locker", Password: "pw"}
	tests := []struct {
		name     string
		server   redistest.Options
		options  redlock.Options
		severity doctor.Severity
		messages []string
	}{
		{name: "allowed", severity: doctor.SeverityOK, messages: []string{"lockmux:released:"}},
		{name: "no channel rights", server: redistest.Options{ACLUsers: []string{"locker on >pw ~* +@all"}}, options: locker,
			severity: doctor.SeverityWarn, messages: []string{"NOPERM", "ACL SETUSER locker &lockmux:released:*", "retry delay"}},
		{name: "the release channels allowed", server: redistest.Options{ACLUsers: []string{"locker on >pw ~* +@all &lockmux:released:*"}},
			options: locker, severity: doctor.SeverityOK, messages: []string{"lockmux:released:"}},
		{name: "no SUBSCRIBE", server: redistest.Options{ACLUsers: []string{"locker on >pw ~* &* +@all -subscribe"}}, options: locker,
			severity: doctor.SeverityWarn, messages: []string{"'subscribe'", "ACL SETUSER locker +subscribe", "retry delay"}},
		{name: "no UNSUBSCRIBE", server: redistest.Options{ACLUsers: []string{"locker on >pw ~* &* +@all -unsubscribe"}}, options: locker,
			severity: doctor.SeverityWarn, messages: []string{"'unsubscribe'", "stops listening to this node when its first wait ends",
				"ACL SETUSER locker +unsubscribe", "retry delay"}},
		{name: "RESP2 only", server: redistest.Options{ExtraArgs: []string{"--rename-command", "HELLO", ""}},
			severity: doctor.SeverityWarn, messages: []string{"RESP2", "retry delay"}},
		{name: "Options.Protocol RESP2", options: redlock.Options{Protocol: redlock.ProtocolRESP2},
			severity: doctor.SeverityWarn, messages: []string{"Options.Protocol", "retry delay"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := redistest.Start(t, tt.server)
			reports, err := doctor.Run(doctorContext(t), []string{server.Addr()}, tt.options, doctor.Options{})
			require.NoError(t, err)
			finding := findingOf(t, reports[0], doctor.CheckNotifications)
			assert.Equal(t, tt.severity, finding.Severity, finding.Message)
			for _, message := range tt.messages {
				assert.Contains(t, finding.Message, message)
			}
		})
	}
}

// The epoch check reads the marker of the quarantine without writing it:
// none on a new server, one written by another process after a restart,
// and one as old as the node once the node is stated new.
func TestDoctorReadsTheEpochMarker(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	epoch := func() doctor.Finding {
		reports, err := doctor.Run(doctorContext(t), []string{server.Addr()}, redlock.Options{}, doctor.Options{LongestTTL: time.Minute})
		require.NoError(t, err)
		return findingOf(t, reports[0], doctor.CheckEpoch)
	}
	missing := epoch()
	assert.Equal(t, doctor.SeverityWarn, missing.Severity)
	assert.Contains(t, missing.Message, "no epoch marker")
	assert.Equal(t, "0", server.Do(t, "EXISTS", "lockmux:epoch"), "the doctor only reads")

	require.Equal(t, "OK", server.Do(t, "SET", "lockmux:epoch", "0123456789abcdef 0"))
	foreign := epoch()
	assert.Equal(t, doctor.SeverityWarn, foreign.Severity)
	assert.Contains(t, foreign.Message, "written by another server process")

	client, err := redlock.New([]string{server.Addr()}, redlock.Options{})
	require.NoError(t, err)
	defer client.Close()
	require.NoError(t, client.TrustNodes(doctorContext(t)))
	trusted := epoch()
	assert.Equal(t, doctor.SeverityOK, trusted.Severity, trusted.Message)
}

// A master that Redis Sentinel serves: its replica is expected, and the
// sentinels are asked. A sentinel that is down is a warning; sentinels
// that name different masters fail the check.
func TestDoctorChecksSentinelMembers(t *testing.T) {
	group := redistest.StartSentinelGroup(t, "locks", 3, redistest.Options{})
	reports, err := doctor.Run(doctorContext(t), []string{group.Address()}, redlock.Options{}, doctor.Options{})
	require.NoError(t, err)
	role := findingOf(t, reports[0], doctor.CheckRole)
	assert.Equal(t, doctor.SeverityOK, role.Severity, role.Message)
	assert.Contains(t, role.Message, "served by Sentinel")
	sentinel := findingOf(t, reports[0], doctor.CheckSentinel)
	assert.Equal(t, doctor.SeverityOK, sentinel.Severity, sentinel.Message)
	assert.Contains(t, sentinel.Message, "3 sentinel(s) agree the master is "+group.Master().Addr())

	group.Sentinels[2].Shutdown()
	reports, err = doctor.Run(doctorContext(t), []string{group.Address()}, redlock.Options{}, doctor.Options{})
	require.NoError(t, err)
	sentinel = findingOf(t, reports[0], doctor.CheckSentinel)
	assert.Equal(t, doctor.SeverityWarn, sentinel.Severity, sentinel.Message)
	assert.Contains(t, sentinel.Message, group.Sentinels[2].Addr())

	// One sentinel told to follow another master: they disagree.
	other := redistest.Start(t, redistest.Options{})
	group.Sentinels[1].Do(t, "SENTINEL", "REMOVE", "locks")
	group.Sentinels[1].Do(t, "SENTINEL", "MONITOR", "locks", "127.0.0.1", strconv.Itoa(other.Port()), "1")
	reports, err = doctor.Run(doctorContext(t), []string{group.Address()}, redlock.Options{}, doctor.Options{})
	require.NoError(t, err)
	sentinel = findingOf(t, reports[0], doctor.CheckSentinel)
	assert.Equal(t, doctor.SeverityFail, sentinel.Severity, sentinel.Message)
	assert.Contains(t, sentinel.Message, "disagree")
}

// The doctor checks a Redis Cluster member as a cluster: its state ok and
// every slot served, and fails a plain address that reaches a node in
// cluster mode, naming the address form to give.
func TestDoctorChecksClusterMembers(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{})
	reports, err := doctor.Run(doctorContext(t), []string{cluster.Address()}, redlock.Options{}, doctor.Options{})
	require.NoError(t, err)
	finding := findingOf(t, reports[0], doctor.CheckCluster)
	assert.Equal(t, doctor.SeverityOK, finding.Severity, finding.Message)
	assert.Contains(t, finding.Message, "3 master(s) serving every slot")
	epoch := findingOf(t, reports[0], doctor.CheckEpoch)
	assert.Equal(t, doctor.SeverityWarn, epoch.Severity, epoch.Message)
	assert.Contains(t, epoch.Message, "no marker of its own server process", "each master is read")

	client, err := redlock.New([]string{cluster.Address()}, redlock.Options{})
	require.NoError(t, err)
	require.NoError(t, client.TrustNodes(doctorContext(t)))
	require.NoError(t, client.Close())
	reports, err = doctor.Run(doctorContext(t), []string{cluster.Address()}, redlock.Options{}, doctor.Options{})
	require.NoError(t, err)
	epoch = findingOf(t, reports[0], doctor.CheckEpoch)
	assert.Equal(t, doctor.SeverityOK, epoch.Severity, epoch.Message)
	assert.Contains(t, epoch.Message, "the 3 master(s)")

	reports, err = doctor.Run(doctorContext(t), []string{cluster.Masters[0].Addr()}, redlock.Options{}, doctor.Options{})
	require.NoError(t, err)
	finding = findingOf(t, reports[0], doctor.CheckCluster)
	assert.Equal(t, doctor.SeverityFail, finding.Severity, finding.Message)
	assert.Contains(t, finding.Message, "redis-cluster://")

	cluster.Masters[2].Kill9() // a master without a replica: its slots are served by nobody
	require.True(t, waitFor(func() bool {
		return strings.Contains(cluster.Masters[0].Do(t, "CLUSTER", "INFO"), "cluster_state:fail")
	}), "the cluster sees the slots unserved")
	reports, err = doctor.Run(doctorContext(t), []string{cluster.Address()}, redlock.Options{}, doctor.Options{})
	require.NoError(t, err)
	finding = findingOf(t, reports[0], doctor.CheckCluster)
	assert.Equal(t, doctor.SeverityFail, finding.Severity, finding.Message)
	assert.Contains(t, finding.Message, "of 16384 slots served")
}

// waitFor polls condition for at most ten seconds: a cluster's state has
// no notification to wait on.
func waitFor(condition func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); !condition(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// With a Redis Cluster member, a Client announces releases with sharded
// pub/sub on every node, and the doctor checks what it does: SSUBSCRIBE
// and SPUBLISH on the release channel of a probe key whose hash tag keeps
// its fencing counter and its channel in its slot, as a lock's must. A
// user without SSUBSCRIBE is told to grant +ssubscribe.
func TestDoctorChecksShardedAnnouncements(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, false, redistest.Options{
		ACLUsers: []string{"locker on >pw ~* &* +@all -ssubscribe"},
	})
	for _, test := range []struct {
		options       redlock.Options
		severity      doctor.Severity
		notifications string
		permissions   string
	}{
		{redlock.Options{}, doctor.SeverityOK, "SSUBSCRIBE", "+spublish +ssubscribe +sunsubscribe"},
		{redlock.Options{Username: "locker", Password: "pw"}, doctor.SeverityWarn, "+ssubscribe", "+ssubscribe"},
	} {
		reports, err := doctor.Run(doctorContext(t), []string{cluster.Address()}, test.options, doctor.Options{})
		require.NoError(t, err)
		notifications := findingOf(t, reports[0], doctor.CheckNotifications)
		assert.Equal(t, test.severity, notifications.Severity, notifications.Message)
		assert.Contains(t, notifications.Message, test.notifications)
		permissions := findingOf(t, reports[0], doctor.CheckPermissions)
		assert.Equal(t, test.severity, permissions.Severity, permissions.Message)
		assert.Contains(t, permissions.Message, test.permissions)
	}
}
