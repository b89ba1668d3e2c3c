// Package mux sends one command to N independent Redis servers at once and
// gathers their replies: the transport of Redlock.
//
// A [Group] holds one pipelined [conn.Conn] per server. A caller fills a
// reusable [Round] with one command per server (usually the same one),
// [Group.Send] writes all of them before any reply is awaited, and
// [Group.Wait] collects the replies under one deadline, the servers'; the
// caller's context only bounds how long the caller waits. A [Tally] given to
// Wait can stop it as soon as the outcome is decided (a quorum reached, or
// no longer possible): the replies still on their way are read and dropped
// in order by the next reader of each connection, never taken for the
// answer to another command.
//
// Concurrent callers share the connections: their commands to one server
// are coalesced into one write, and one read serves all the replies that
// arrived together. There is no goroutine and no channel per call, and a
// reused Round does not allocate.
//
// # Concurrency
//
// A [Group] is safe for concurrent use. A [Round] belongs to one caller at
// a time.
//
// # Errors
//
// Each server's outcome is in its [conn.Call] of the Round: its reply, or
// its transport error with the server's address. A server that is down
// fails its call at once with an error matching [conn.ErrNotConnected]
// while it is dialled again in the background, so it costs a round
// nothing; a server that does not answer costs at most the deadline.
package mux
