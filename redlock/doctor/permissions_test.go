package doctor_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/doctor"
)

// probeKeyPattern admits the probe keys under "orders:" and not their
// fencing counters: "orders:lockmux-doctor:" and sixteen hexadecimal
// digits.
var probeKeyPattern = "~orders:lockmux-doctor:" + strings.Repeat("[0-9a-f]", 16)

// lockerRule is the minimal ACL rule of the user "locker" (password "pw")
// whose lock keys start with "orders:", part by part, the keys first.
var lockerRule = []string{
	"~orders:*", "~lockmux:epoch*", "resetchannels &lockmux:released:orders:*",
	"+set", "+evalsha", "+eval", "+script|load", "+get", "+del", "+pttl", "+pexpire",
	"+publish", "+subscribe", "+unsubscribe", "+client|tracking", "+info", "+time",
}

// lockerWithout returns the ACL user of locker without the parts given,
// and with the parts extra.
func lockerWithout(without []string, extra ...string) string {
	words := []string{"locker", "on", ">pw"}
	for _, part := range lockerRule {
		if !slices.Contains(without, part) {
			words = append(words, part)
		}
	}
	return strings.Join(append(words, extra...), " ")
}

// permissionsOf runs the doctor as locker over a server with the users
// given, and returns the permissions finding.
func permissionsOf(t *testing.T, users []string, keyPrefix string) doctor.Finding {
	t.Helper()
	server := redistest.Start(t, redistest.Options{ACLUsers: users})
	reports, err := doctor.Run(doctorContext(t), []string{server.Addr()}, redlock.Options{Username: "locker", Password: "pw"},
		doctor.Options{KeyPrefix: keyPrefix})
	require.NoError(t, err)
	require.Len(t, reports, 1)
	finding := findingOf(t, reports[0], doctor.CheckPermissions)
	assert.Equal(t, doctor.CheckPermissions, reports[0].Findings[len(reports[0].Findings)-1].Check, "the last check")
	// The probe cleans up after itself: nothing is left on the node
	// when the user may delete what it set.
	if !strings.Contains(finding.Message, "+del") {
		assert.Equal(t, "0", server.Do(t, "DBSIZE"), "keys left by the probe")
	}
	return finding
}

// A user with every right, and a user with exactly the minimal rule for
// the keys under the prefix given, pass; a user missing any part of the
// rule gets a finding that names it and the ACL SETUSER rule that grants
// it, failing when lock operations would fail and warning when only
// fencing or notifications would.
func TestDoctorChecksPermissions(t *testing.T) {
	redistest.RequireReal(t)
	tests := []struct {
		name     string
		users    []string
		prefix   string
		severity doctor.Severity
		messages []string // in the message
		absent   []string // not in the message
	}{
		{name: "every right", users: []string{"locker on >pw ~* &* +@all"},
			severity: doctor.SeverityOK, messages: []string{"the user locker may run every command lockmux sends", "lockmux-doctor:"}},
		{name: "the minimal rule", users: []string{lockerWithout(nil)}, prefix: "orders:",
			severity: doctor.SeverityOK, messages: []string{"orders:lockmux-doctor:"}},
		{name: "no EVALSHA", users: []string{lockerWithout([]string{"+evalsha"})}, prefix: "orders:",
			severity: doctor.SeverityFail, messages: []string{"+evalsha (Extend", "NOPERM", "ACL SETUSER locker +evalsha (and in the ACL file)"}},
		{name: "no SCRIPT LOAD", users: []string{lockerWithout([]string{"+script|load"})}, prefix: "orders:",
			severity: doctor.SeverityFail, messages: []string{"+script|load (no connection", "ACL SETUSER locker +script|load "}},
		{name: "no GET, called by the scripts", users: []string{lockerWithout([]string{"+get"})}, prefix: "orders:",
			severity: doctor.SeverityFail, messages: []string{"+get (Unlock", "script", "ACL SETUSER locker +get "}},
		{name: "no PEXPIRE and no PUBLISH", users: []string{lockerWithout([]string{"+pexpire", "+publish"})}, prefix: "orders:",
			severity: doctor.SeverityFail, messages: []string{"+pexpire (Extend", "+publish (releases are not announced", "ACL SETUSER locker +pexpire +publish "}},
		{name: "no UNSUBSCRIBE", users: []string{lockerWithout([]string{"+unsubscribe"})}, prefix: "orders:",
			severity: doctor.SeverityWarn, messages: []string{"+unsubscribe (the first wait", "ACL SETUSER locker +unsubscribe "}},
		{name: "no SUBSCRIBE", users: []string{lockerWithout([]string{"+subscribe"})}, prefix: "orders:",
			severity: doctor.SeverityWarn, messages: []string{"+subscribe (waiters cannot listen", "ACL SETUSER locker +subscribe ",
				"could not check +unsubscribe"}, absent: []string{"+unsubscribe ("}},
		{name: "no CLIENT TRACKING", users: []string{lockerWithout([]string{"+client|tracking"})}, prefix: "orders:",
			severity: doctor.SeverityWarn, messages: []string{"+client|tracking (the keys of renewed holds are not watched", "ACL SETUSER locker +client|tracking "}},
		{name: "no INFO", users: []string{lockerWithout([]string{"+info"})}, prefix: "orders:",
			severity: doctor.SeverityFail, messages: []string{"+info (a Client cannot find two addresses", "ACL SETUSER locker +info "}},
		{name: "no TIME", users: []string{lockerWithout([]string{"+time"})}, prefix: "orders:",
			severity: doctor.SeverityFail, messages: []string{"+time (with the quarantine on", "ACL SETUSER locker +time "}},
		{name: "no epoch markers", users: []string{lockerWithout([]string{"~lockmux:epoch*"})}, prefix: "orders:",
			severity: doctor.SeverityFail, messages: []string{"~lockmux:epoch* (with the quarantine on", "ACL SETUSER locker ~lockmux:epoch* "}},
		{name: "no channels", users: []string{lockerWithout([]string{"resetchannels &lockmux:released:orders:*"})}, prefix: "orders:",
			severity: doctor.SeverityWarn, messages: []string{"&lockmux:released:orders:* (waiters are not woken", "ACL SETUSER locker &lockmux:released:orders:* "}},
		{name: "no lock keys", users: []string{lockerWithout([]string{"~orders:*"}, "~invoices:*")}, prefix: "orders:",
			severity: doctor.SeverityFail, messages: []string{"~orders:* (every operation fails", "ACL SETUSER locker ~orders:* "}},
		{name: "no fencing counters", users: []string{lockerWithout([]string{"~orders:*"}, probeKeyPattern)}, prefix: "orders:",
			severity: doctor.SeverityWarn, messages: []string{"~orders:*:lockmux-fence (fenced Locks", "ACL SETUSER locker ~orders:*:lockmux-fence "},
			absent: []string{"~orders:* ("}},
		{name: "no prefix given for a user of some keys", users: []string{lockerWithout(nil)},
			severity: doctor.SeverityWarn, messages: []string{"may not use the probe key lockmux-doctor:", "--key-prefix", "could not check"}},
		{name: "no command at all", users: []string{"locker on >pw ~* &*"}, prefix: "orders:",
			severity: doctor.SeverityFail, messages: []string{"ACL SETUSER locker +set +evalsha +eval +script|load +get +subscribe +client|tracking +info +time ",
				"could not check ~orders:* ~orders:*:lockmux-fence ~lockmux:epoch* &lockmux:released:orders:* +del +pttl +pexpire +publish +unsubscribe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			finding := permissionsOf(t, tt.users, tt.prefix)
			assert.Equal(t, tt.severity, finding.Severity, finding.Message)
			for _, message := range tt.messages {
				assert.Contains(t, finding.Message, message)
			}
			for _, message := range tt.absent {
				assert.NotContains(t, finding.Message, message)
			}
		})
	}
}

// The probe never touches a key that a lock may hold: it uses a key of
// its own under the prefix, and leaves the other keys as they were.
func TestPermissionsProbeLeavesLockKeysAlone(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	require.Equal(t, "OK", server.Do(t, "SET", "orders:1", "a-token", "PX", "60000"))
	require.Equal(t, "OK", server.Do(t, "SET", "orders:1:lockmux-fence", "41"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reports, err := doctor.Run(ctx, []string{server.Addr()}, redlock.Options{}, doctor.Options{KeyPrefix: "orders:"})
	require.NoError(t, err)
	assert.Equal(t, doctor.SeverityOK, findingOf(t, reports[0], doctor.CheckPermissions).Severity)
	assert.Equal(t, "[orders:1 orders:1:lockmux-fence]", sortedKeys(t, server))
	assert.Equal(t, "a-token", server.Do(t, "GET", "orders:1"))
	assert.Equal(t, "41", server.Do(t, "GET", "orders:1:lockmux-fence"))
}

// sortedKeys returns the server's keys, sorted, as redistest renders an
// array.
func sortedKeys(t *testing.T, server *redistest.Server) string {
	t.Helper()
	return server.Do(t, "EVAL", "local keys = redis.call('KEYS', '*') table.sort(keys) return keys", "0")
}
