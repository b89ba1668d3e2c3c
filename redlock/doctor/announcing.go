package doctor

import (
	"strings"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// announcing is how a Client of the checked nodes announces releases and
// listens for them, which the notifications and permissions checks do as
// it does: with pub/sub (PUBLISH, SUBSCRIBE, UNSUBSCRIBE) on the channel
// lockmux:released:KEY; or, when a node is a Redis Cluster, with sharded
// pub/sub (SPUBLISH, SSUBSCRIBE, SUNSUBSCRIBE) on every node, on the
// channel lockmux:released:{TAG}KEY, TAG a hash tag of the key's slot
// (see the redlock package).
type announcing struct {
	sharded bool
}

// announcingOf returns how a Client of group's nodes announces releases.
func announcingOf(group *mux.Group) announcing {
	for i := range group.Len() {
		if group.IsCluster(i) {
			return announcing{sharded: true}
		}
	}
	return announcing{}
}

// channel returns the release channel of key.
func (a announcing) channel(key string) string {
	if a.sharded {
		return naming.ShardedChannelPrefix(mux.SlotTag(mux.Slot(key))) + key
	}
	return naming.ReleasedChannelPrefix + key
}

// command returns the name of the command a Client sends for name
// (PUBLISH, SUBSCRIBE or UNSUBSCRIBE, upper case): the sharded one when
// announcements are sharded.
func (a announcing) command(name string) string {
	if a.sharded {
		return "S" + name
	}
	return name
}

// rule returns the part of the minimal ACL rule that grants the commands
// (naming.UserCommandsRule), with the sharded pub/sub commands when
// announcements are sharded.
func (a announcing) rule() string {
	if !a.sharded {
		return naming.UserCommandsRule
	}
	return strings.NewReplacer("+publish", "+spublish", "+subscribe", "+ssubscribe", "+unsubscribe", "+sunsubscribe").
		Replace(naming.UserCommandsRule)
}

// ruleWord returns the ACL SETUSER word that grants part (a command's
// rule word as the permissions list names it, or partKeys, partFenceKeys,
// partEpochKeys or partChannels) to a user whose lock keys start with
// prefix.
func (a announcing) ruleWord(part, prefix string) string {
	switch part {
	case partKeys:
		return "~" + prefix + "*"
	case partFenceKeys:
		return "~" + prefix + "*" + naming.FenceKeySuffix
	case partEpochKeys:
		return naming.EpochKeysRule
	case partChannels:
		if a.sharded {
			return "&" + naming.ShardedChannelPrefix("*") + prefix + "*"
		}
		return "&" + naming.ReleasedChannelPrefix + prefix + "*"
	case "+publish", "+subscribe", "+unsubscribe":
		return "+" + strings.ToLower(a.command(strings.ToUpper(part[1:])))
	}
	return part
}
