// Package mux sends one command to N independent Redis servers at once and
// gathers their replies: the one seam between the lock and the network.
// It knows nothing of locks; it carries commands.
//
// A [Group] holds one pipelined connection per server. A caller builds one
// command into a reusable [Round] (StartCommand and the Append methods, or
// SetScript for a Lua script), may leave servers out with [Round.Skip],
// and [Group.Send] writes it to every server before any reply is awaited.
// [Group.Wait] collects the replies under one deadline, the servers'; the
// caller's context only bounds how long the caller waits. A [Tally] given
// to Wait can stop it as soon as the outcome is decided (a quorum reached,
// or no longer possible): the replies still on their way are read and
// dropped in order by the next reader of each connection, never taken for
// the answer to another command. Each server's outcome is read with
// [Round.Reply], [Round.Err], [Round.Latency] and [Round.Abandoned].
//
// A command that must take effect whether or not anybody waits for it, such
// as a release, is marked with Carry: its connection finishes it, and sends
// it again after a reconnection, until it is answered or it stops
// mattering; what could not be finished is reported to
// [Options.OnUnfinished], and [Group.Close] waits a bounded time for it.
// A command marked with Deliver, such as an acquisition, reaches a server
// whose connection is being dialled even when the round was decided
// without it.
//
// A node of a Group may be a Redis Cluster (a redis-cluster:// address,
// see conn.ParseAddress): it keeps one connection per master, sends each
// command to the master of its first key's slot (see [Slot]), keyless
// commands to any master, and follows MOVED and ASK redirects inside the
// node, at most five times ([ErrRedirectLoop]); a TRYAGAIN reply (keys
// of one command split by a slot migration) is tried again after a
// backoff, a few times within the command's deadline, and a carried
// command until it stops mattering; its slot map comes from
// CLUSTER SHARDS (CLUSTER SLOTS on Redis 6), read again after a MOVED and
// when a master cannot be reached. Plain nodes follow no redirect.
//
// Commands for one server alone, off the fast path (diagnostics,
// inspection), are [Request]s sent with [Group.Do].
//
// Push commands travel apart from rounds: a [Subscriber] keeps one more
// connection per server (per master of a cluster, where sharded
// subscriptions go to the master of their channel's slot and follow it),
// which carries subscriptions (SUBSCRIBE, SSUBSCRIBE) and,
// with [SubscribeOptions.OnInvalidate], key tracking: [Subscriber.Track]
// arms keys with a read on that connection, and the server's next change
// of each armed key, by whoever made it, is reported as an [Invalidation]
// with the tag of the arming it ended, so that the caller can tell the
// changes it made itself before an arming from those made after it.
//
// Concurrent callers share the connections: their commands to one server
// are coalesced into one write, and one read serves all the replies that
// arrived together. There is no goroutine and no channel per call, and a
// reused Round does not allocate.
//
// # Concurrency
//
// A [Group] is safe for concurrent use. A [Round] or a [Request] belongs to
// one caller at a time.
//
// # Errors
//
// Each server's outcome is its reply, or its transport error with the
// server's address. A server that is down fails its command at once with
// an error matching [ErrNotConnected] while it is dialled again in the
// background, so it costs a round nothing; a server that does not answer
// costs at most the deadline. A caller whose context ends gets the
// context's error. A server error reply is a reply of type
// resp.TypeError, not an error.
package mux
