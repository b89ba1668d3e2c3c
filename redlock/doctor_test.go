package redlock_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/resp"
)

// doctorContext bounds one Doctor call of a test.
func doctorContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// findingOf returns the finding of check in report, failing the test when
// there is none.
func findingOf(t *testing.T, report redlock.NodeReport, check string) redlock.Finding {
	t.Helper()
	for _, finding := range report.Findings {
		if finding.Check == check {
			return finding
		}
	}
	require.Failf(t, "no finding", "check %q missing from %+v", check, report.Findings)
	return redlock.Finding{}
}

// doctorClient returns a Client over addresses, closed when the test ends.
func doctorClient(t *testing.T, addresses ...string) *redlock.Client {
	t.Helper()
	client, err := redlock.New(addresses, redlock.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client
}

func TestDoctorDefaultServerWarnsAboutPersistence(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	reports, err := doctorClient(t, server.Addr()).Doctor(doctorContext(t), redlock.DoctorOptions{})
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
	assert.Equal(t, []string{redlock.CheckReachable, redlock.CheckRole, redlock.CheckCluster, redlock.CheckRunID,
		redlock.CheckPersistence, redlock.CheckEviction, redlock.CheckUptime, redlock.CheckClock, redlock.CheckNotifications}, checks)
	for _, check := range []string{redlock.CheckReachable, redlock.CheckRole, redlock.CheckCluster, redlock.CheckRunID,
		redlock.CheckEviction, redlock.CheckClock} {
		assert.Equal(t, redlock.SeverityOK, findingOf(t, report, check).Severity, "%s: %s", check, findingOf(t, report, check).Message)
	}
	persistence := findingOf(t, report, redlock.CheckPersistence)
	assert.Equal(t, redlock.SeverityWarn, persistence.Severity)
	assert.Contains(t, persistence.Message, "appendonly no")
	assert.Contains(t, persistence.Message, "set appendonly yes and appendfsync always")
	uptime := findingOf(t, report, redlock.CheckUptime)
	assert.Equal(t, redlock.SeverityWarn, uptime.Severity, "a server started just now without persistence: %s", uptime.Message)
	assert.Equal(t, redlock.SeverityWarn, report.Severity())
	assert.Less(t, report.ClockOffset.Abs(), redlock.DefaultMaxClockOffset, "the same host's clock")
}

func TestDoctorSafeServerPasses(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{ExtraArgs: []string{
		"--appendonly", "yes", "--appendfsync", "always", "--maxmemory-policy", "noeviction"}})
	reports, err := doctorClient(t, server.Addr()).Doctor(doctorContext(t), redlock.DoctorOptions{LongestTTL: time.Hour})
	require.NoError(t, err)
	require.Len(t, reports, 1)
	for _, finding := range reports[0].Findings {
		assert.Equal(t, redlock.SeverityOK, finding.Severity, "%s: %s", finding.Check, finding.Message)
	}
	assert.Contains(t, findingOf(t, reports[0], redlock.CheckUptime).Message, "appendfsync always kept its locks")
	assert.Equal(t, redlock.SeverityOK, reports[0].Severity())
}

func TestDoctorReplicaFails(t *testing.T) {
	redistest.RequireReal(t)
	servers := redistest.StartN(t, 2, redistest.Options{})
	master, replica := servers[0], servers[1]
	require.Equal(t, "OK", replica.Do(t, "REPLICAOF", "127.0.0.1", strconv.Itoa(master.Port())))

	reports, err := doctorClient(t, master.Addr(), replica.Addr()).Doctor(doctorContext(t), redlock.DoctorOptions{})
	require.NoError(t, err)
	role := findingOf(t, reports[1], redlock.CheckRole)
	assert.Equal(t, redlock.SeverityFail, role.Severity)
	assert.Contains(t, role.Message, "a replica of 127.0.0.1:"+strconv.Itoa(master.Port()))
	assert.Equal(t, redlock.SeverityFail, reports[1].Severity())
	assert.NotEqual(t, redlock.SeverityFail, findingOf(t, reports[0], redlock.CheckRole).Severity, "the master itself is a master")
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
	require.ErrorIs(t, err, redlock.ErrDuplicateNode, "the client refuses what Doctor must still explain")
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
			reports, err := redlock.Doctor(doctorContext(t), tt.addresses, redlock.Options{}, redlock.DoctorOptions{})
			require.NoError(t, err)
			require.Len(t, reports, 2)
			for _, report := range reports {
				runID := findingOf(t, report, redlock.CheckRunID)
				assert.Equal(t, redlock.SeverityFail, runID.Severity)
				assert.Contains(t, runID.Message, tt.names)
				assert.Contains(t, runID.Message, "count more than once in a quorum")
				assert.Equal(t, redlock.SeverityFail, report.Severity())
			}
		})
	}
}

func TestDoctorUnreachableNodeFails(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	address := listener.Addr().String()
	require.NoError(t, listener.Close())

	reports, err := redlock.Doctor(doctorContext(t), []string{address}, redlock.Options{DialTimeout: time.Second}, redlock.DoctorOptions{})
	require.NoError(t, err)
	require.Len(t, reports, 1)
	require.Len(t, reports[0].Findings, 1)
	finding := reports[0].Findings[0]
	assert.Equal(t, redlock.CheckReachable, finding.Check)
	assert.Equal(t, redlock.SeverityFail, finding.Severity)
	assert.Contains(t, finding.Message, "cannot reach the node")
	assert.Contains(t, finding.Message, address, "the error names the node")
}

func TestDoctorOptionsAreValidated(t *testing.T) {
	tests := []struct {
		name    string
		options redlock.DoctorOptions
	}{
		{name: "negative longest TTL", options: redlock.DoctorOptions{LongestTTL: -time.Second}},
		{name: "negative clock offset", options: redlock.DoctorOptions{MaxClockOffset: -time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := redlock.Doctor(context.Background(), []string{"127.0.0.1:1"}, redlock.Options{}, tt.options)
			assert.ErrorIs(t, err, redlock.ErrInvalidOptions)
		})
	}
	_, err := redlock.Doctor(context.Background(), nil, redlock.Options{}, redlock.DoctorOptions{})
	assert.ErrorIs(t, err, redlock.ErrInvalidOptions)
}

func TestDoctorClosedClient(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	client := doctorClient(t, server.Addr())
	require.NoError(t, client.Close())
	_, err := client.Doctor(context.Background(), redlock.DoctorOptions{})
	assert.ErrorIs(t, err, redlock.ErrClosed)
}

// fakeNode describes what a scripted server answers to Doctor.
type fakeNode struct {
	info        string        // the INFO text
	config      string        // "" answers CONFIG with NOPERM
	clockOffset time.Duration // added to the real time in TIME
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
		severity redlock.Severity
		message  string
	}{
		{name: "safe", node: fakeNode{info: fakeInfo(nil), config: "always"},
			check: redlock.CheckPersistence, severity: redlock.SeverityOK, message: "appendfsync always"},
		{name: "fsync every second", node: fakeNode{info: fakeInfo(nil), config: "everysec"},
			check: redlock.CheckPersistence, severity: redlock.SeverityWarn, message: "appendfsync everysec"},
		{name: "CONFIG refused", node: fakeNode{info: fakeInfo(nil)},
			check: redlock.CheckPersistence, severity: redlock.SeverityWarn, message: "NOPERM"},
		{name: "cluster mode", node: fakeNode{info: fakeInfo(map[string]string{"cluster_enabled": "1"}), config: "always"},
			check: redlock.CheckCluster, severity: redlock.SeverityFail, message: "cluster-enabled no"},
		{name: "master with replicas", node: fakeNode{info: fakeInfo(map[string]string{"connected_slaves": "2"}), config: "always"},
			check: redlock.CheckRole, severity: redlock.SeverityWarn, message: "2 replica(s)"},
		{name: "eviction", node: fakeNode{info: fakeInfo(map[string]string{"maxmemory_policy": "allkeys-lru"}), config: "always"},
			check: redlock.CheckEviction, severity: redlock.SeverityWarn, message: "set maxmemory-policy noeviction"},
		{name: "eviction unknown", node: fakeNode{info: fakeInfo(map[string]string{"maxmemory_policy": ""})},
			check: redlock.CheckEviction, severity: redlock.SeverityWarn, message: "cannot read maxmemory-policy"},
		{name: "recent restart", node: fakeNode{info: fakeInfo(map[string]string{"uptime_in_seconds": "3", "aof_enabled": "0"})},
			check: redlock.CheckUptime, severity: redlock.SeverityWarn, message: "wait 7s"},
		{name: "clock ahead", node: fakeNode{info: fakeInfo(nil), config: "always", clockOffset: 3 * time.Second},
			check: redlock.CheckClock, severity: redlock.SeverityWarn, message: "ahead of this host's"},
		{name: "clock behind", node: fakeNode{info: fakeInfo(nil), config: "always", clockOffset: -3 * time.Second},
			check: redlock.CheckClock, severity: redlock.SeverityWarn, message: "behind this host's"},
		{name: "clock close", node: fakeNode{info: fakeInfo(nil), config: "always"},
			check: redlock.CheckClock, severity: redlock.SeverityOK, message: "this host's"},
		{name: "no run_id", node: fakeNode{info: fakeInfo(map[string]string{"run_id": ""}), config: "always"},
			check: redlock.CheckRunID, severity: redlock.SeverityWarn, message: "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			address := tt.node.start(t)
			reports, err := redlock.Doctor(doctorContext(t), []string{address}, redlock.Options{}, redlock.DoctorOptions{})
			require.NoError(t, err)
			finding := findingOf(t, reports[0], tt.check)
			assert.Equal(t, tt.severity, finding.Severity, finding.Message)
			assert.Contains(t, finding.Message, tt.message)
		})
	}
}

func TestSeverityString(t *testing.T) {
	assert.Equal(t, "ok", redlock.SeverityOK.String())
	assert.Equal(t, "warn", redlock.SeverityWarn.String())
	assert.Equal(t, "fail", redlock.SeverityFail.String())
}

// Doctor tells whether a node can carry the release notifications that
// wake waiters, and how to fix it when it cannot: the ACL channel rule for
// a user who may not use the release channels.
func TestDoctorChecksNotifications(t *testing.T) {
	redistest.RequireReal(t)
	locker := redlock.Options{Username: "locker", Password: "pw"}
	tests := []struct {
		name     string
		server   redistest.Options
		options  redlock.Options
		severity redlock.Severity
		messages []string
	}{
		{name: "allowed", severity: redlock.SeverityOK, messages: []string{"lockmux:released:"}},
		{name: "no channel rights", server: redistest.Options{ACLUsers: []string{"locker on >pw ~* +@all"}}, options: locker,
			severity: redlock.SeverityWarn, messages: []string{"NOPERM", "ACL SETUSER locker &lockmux:released:*", "retry delay"}},
		{name: "the release channels allowed", server: redistest.Options{ACLUsers: []string{"locker on >pw ~* +@all &lockmux:released:*"}},
			options: locker, severity: redlock.SeverityOK, messages: []string{"lockmux:released:"}},
		{name: "RESP2 only", server: redistest.Options{ExtraArgs: []string{"--rename-command", "HELLO", ""}},
			severity: redlock.SeverityWarn, messages: []string{"RESP2", "retry delay"}},
		{name: "Options.Protocol RESP2", options: redlock.Options{Protocol: redlock.ProtocolRESP2},
			severity: redlock.SeverityWarn, messages: []string{"Options.Protocol", "retry delay"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := redistest.Start(t, tt.server)
			reports, err := redlock.Doctor(doctorContext(t), []string{server.Addr()}, tt.options, redlock.DoctorOptions{})
			require.NoError(t, err)
			finding := findingOf(t, reports[0], redlock.CheckNotifications)
			assert.Equal(t, tt.severity, finding.Severity, finding.Message)
			for _, message := range tt.messages {
				assert.Contains(t, finding.Message, message)
			}

			client, err := redlock.New([]string{server.Addr()}, tt.options)
			require.NoError(t, err)
			defer client.Close()
			reports, err = client.Doctor(doctorContext(t), redlock.DoctorOptions{})
			require.NoError(t, err)
			assert.Equal(t, finding, findingOf(t, reports[0], redlock.CheckNotifications), "Client.Doctor finds the same")
		})
	}
}
