package doctor

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// The check knows every command of the rule that docs/acl.md gives and the
// lock package's experiments establish (naming.UserCommandsRule), in its
// order, and nothing more.
func TestPermissionsCoverTheRule(t *testing.T) {
	var commands []string
	for _, permission := range permissions {
		if strings.HasPrefix(permission.part, "+") {
			commands = append(commands, permission.part)
		}
		assert.NotEmpty(t, permission.without, permission.part)
	}
	assert.Equal(t, naming.UserCommandsRule, strings.Join(commands, " "))
}

// The refusals of the Redis versions with ACLs are told apart: a command,
// a key or a channel, sent by the user or called by a script.
func TestClassifyRefusal(t *testing.T) {
	tests := []struct {
		name    string
		message string
		want    refusal
	}{
		{name: "7.0 command", message: "NOPERM this user has no permissions to run the 'evalsha' command", want: refusedCommand},
		{name: "7.0 key", message: "NOPERM this user has no permissions to access one of the keys used as arguments", want: refusedKey},
		{name: "7.0 channel", message: "NOPERM this user has no permissions to access one of the channels used as arguments", want: refusedChannel},
		{name: "7.0 script command", message: "ERR The user executing the script can't run this command or subcommand", want: refusedCommand},
		{name: "7.0 script key", message: "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments", want: refusedKey},
		{name: "7.0 script channel", message: "ERR The user executing the script can't publish to the channel mentioned in the command", want: refusedChannel},
		{name: "7.2 command", message: "NOPERM User locker has no permissions to run the 'get' command", want: refusedCommand},
		{name: "7.2 command of a user named for keys", message: "NOPERM User keychannel has no permissions to run the 'get' command", want: refusedCommand},
		{name: "7.2 key", message: "NOPERM No permissions to access a key", want: refusedKey},
		{name: "7.2 channel", message: "NOPERM No permissions to access a channel", want: refusedChannel},
		{name: "7.2 script command", message: "ERR ACL failure in script: User locker has no permissions to run the 'pttl' command script: 8a2f, on @user_script:4.", want: refusedCommand},
		{name: "7.2 script key", message: "ERR ACL failure in script: No permissions to access a key script: 8a2f, on @user_script:4.", want: refusedKey},
		{name: "not a refusal", message: "READONLY You can't write against a read only replica.", want: notRefused},
		{name: "a script error", message: "ERR user_script:1: Script attempted to access nonexistent global variable", want: notRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, classifyRefusal(tt.message))
		})
	}
}
