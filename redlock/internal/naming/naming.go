package naming

import "strconv"

// FenceKeySuffix ends the key of a resource's fencing counter, which
// follows the lock's key: the counter of the key "orders:1" is
// "orders:1:lockmux-fence" on every node. The counter has no TTL: it must
// outlive every hold, and survive restarts (appendfsync always).
const FenceKeySuffix = ":lockmux-fence"

// PermitKey returns the key of slot slot of the semaphore name: the
// Mutex key whose hold is a permit.
func PermitKey(name string, slot int) string {
	return name + ":permit:" + strconv.Itoa(slot)
}

// ReadersKeySuffix and WaitingKeySuffix follow the name of a read/write
// lock in the keys of its readers' sorted set and of its waiting marker;
// the writer's key is the name itself.
const (
	ReadersKeySuffix = ":readers"
	WaitingKeySuffix = ":writer-waiting"
)

// QueueKeySuffix, AliveKeySuffix and TicketsKeySuffix follow the key of a
// fair lock in the keys of its waiters' queue, of their heartbeats, and of
// its ticket counter.
const (
	QueueKeySuffix   = ":queue"
	AliveKeySuffix   = ":alive"
	TicketsKeySuffix = ":tickets"
)

// EpochKey is the key of a node's epoch marker (redlock.Options.Quarantine):
// the run_id of the server process that wrote it and the node's time then,
// in milliseconds. It has no TTL.
const EpochKey = "lockmux:epoch"

// ClusterEpochKey returns the key of the epoch marker of the master of a
// Redis Cluster node that the hash tag tag routes to: each master keeps
// its own.
func ClusterEpochKey(tag string) string { return EpochKey + ":{" + tag + "}" }

// ReleasedChannelPrefix starts the pub/sub channel on which the release
// script announces that a key is free; the key follows it.
const ReleasedChannelPrefix = "lockmux:released:"

// ShardedChannelPrefix returns the start of the release channels of the
// keys of one hash slot of a Redis Cluster, tag being a hash tag of that
// slot: on a Client with a cluster member, releases are announced with
// sharded pub/sub (SPUBLISH), whose channel must be in the keys' slot; the
// key follows it, as it follows ReleasedChannelPrefix.
func ShardedChannelPrefix(tag string) string { return ReleasedChannelPrefix + "{" + tag + "}" }

// ReleaseChannelsRule is the ACL rule that lets a user publish and
// subscribe to the release channels.
const ReleaseChannelsRule = "&" + ReleasedChannelPrefix + "*"

// DefaultClientName is the connection name the nodes show in CLIENT LIST
// for the connections of a Client, and of the tools, whose options leave
// it empty.
const DefaultClientName = "lockmux"

// UserCommandsRule is the part of the minimal ACL rule of a lockmux user
// that grants its commands, one word per command, as ACL SETUSER takes
// them: SET (the first attempt of a single-key Lock), EVALSHA and EVAL
// (the scripts; a release is always sent as EVAL), SCRIPT LOAD (every
// connection loads the scripts when it connects), GET, DEL, PTTL and
// PEXPIRE (called by the scripts), PUBLISH (the release script announces
// releases), SUBSCRIBE and UNSUBSCRIBE (waiters listen for them), CLIENT
// TRACKING (renewed holds watch their keys), INFO (the server's run_id,
// and the quarantine's reading of the node) and TIME (the quarantine's
// epoch marker). HELLO and AUTH need no rule. The keys and channels of the
// rule depend on the user's lock keys: see docs/acl.md.
const UserCommandsRule = "+set +evalsha +eval +script|load +get +del +pttl +pexpire +publish +subscribe +unsubscribe +client|tracking +info +time"

// EpochKeysRule is the part of the minimal ACL rule that grants the keys
// of the epoch markers, on a plain node and on a Redis Cluster's masters.
const EpochKeysRule = "~" + EpochKey + "*"
