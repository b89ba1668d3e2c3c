package naming

import "strconv"

// FenceKeySuffix follows a lock's key in the key of its fencing counter,
// which has no TTL.
const FenceKeySuffix = ":lockmux-fence"

// PermitKey returns the key of the semaphore name's permit slot.
func PermitKey(name string, slot int) string {
	return name + ":permit:" + strconv.Itoa(slot)
}

// ReadersKeySuffix and WaitingKeySuffix follow a read/write lock's name in
// the keys of its readers and of its waiting writer.
const (
	ReadersKeySuffix = ":readers"
	WaitingKeySuffix = ":writer-waiting"
)

// QueueKeySuffix, AliveKeySuffix and TicketsKeySuffix follow a fair lock's
// key in the keys of its queue, heartbeats and ticket counter.
const (
	QueueKeySuffix   = ":queue"
	AliveKeySuffix   = ":alive"
	TicketsKeySuffix = ":tickets"
)

// EpochKey is the key of a node's epoch marker: the writer's run_id and
// the node's time in milliseconds. It has no TTL.
const EpochKey = "lockmux:epoch"

// ClusterEpochKey returns the epoch marker key of the Cluster master that
// the hash tag tag routes to.
func ClusterEpochKey(tag string) string { return EpochKey + ":{" + tag + "}" }

// ReleasedChannelPrefix starts the channel announcing a key's release.
const ReleasedChannelPrefix = "lockmux:released:"

// ShardedChannelPrefix is ReleasedChannelPrefix for SPUBLISH, with a hash
// tag of the keys' slot.
func ShardedChannelPrefix(tag string) string { return ReleasedChannelPrefix + "{" + tag + "}" }

// ReleaseChannelsRule is the ACL rule for the release channels.
const ReleaseChannelsRule = "&" + ReleasedChannelPrefix + "*"

// DefaultClientName is the connections' default CLIENT SETNAME.
const DefaultClientName = "lockmux"

// UserCommandsRule is the part of the minimal ACL rule that grants a
// lockmux user's commands (docs/acl.md says why each).
const UserCommandsRule = "+set +evalsha +eval +script|load +get +del +pttl +pexpire +publish +subscribe +unsubscribe +client|tracking +info +time"

// EpochKeysRule is the part of the minimal ACL rule for the epoch markers.
const EpochKeysRule = "~" + EpochKey + "*"
