package naming

// FenceKeySuffix ends the key of a resource's fencing counter, which
// follows the lock's key: the counter of the key "orders:1" is
// "orders:1:lockmux-fence" on every node. The counter has no TTL: it must
// outlive every hold, and survive restarts (appendfsync always).
const FenceKeySuffix = ":lockmux-fence"

// ReleasedChannelPrefix starts the pub/sub channel on which the release
// script announces that a key is free; the key follows it.
const ReleasedChannelPrefix = "lockmux:released:"

// ReleaseChannelsRule is the ACL rule that lets a user publish and
// subscribe to the release channels.
const ReleaseChannelsRule = "&" + ReleasedChannelPrefix + "*"

// DefaultClientName is the connection name the nodes show in CLIENT LIST
// for the connections of a Client, and of the tools, whose options leave
// it empty.
const DefaultClientName = "lockmux"
