// Package faultnet is a fault-injecting TCP proxy for lockmux's tests. It is
// imported by tests only.
//
// A Proxy listens on a free loopback port and forwards every connection it
// accepts to one upstream address, a Redis server on loopback. Each accepted
// connection and its upstream connection form a link. The test switches the
// proxy's modes at any time; a mode applies at once to every current link and
// to every future one:
//
//   - Pass forwards everything (the default) and turns every other mode off.
//   - Delay adds one-way latency to the bytes going up (client to server),
//     down (server to client), or both, without reordering them.
//   - Blackhole, or Partition, keeps the sockets open and forwards nothing in
//     either direction: what is read meanwhile is discarded, and the client
//     hears silence, not a reset. Heal returns to Pass.
//   - DropReplies forwards the requests and drops the next n whole reply
//     frames: the server executes the commands and the client never hears
//     back.
//   - HoldReplies holds every reply frame from then on, and ReleaseReplies
//     delivers the held frames in order: a late reply.
//   - ResetAfter lets n more bytes come from the server, then resets the link
//     with a TCP RST on both sides, possibly in the middle of a frame.
//   - Inject writes raw bytes to the client just before the next reply frame:
//     pushes, hostile or malformed frames.
//   - CutLinks resets every current link at once, as a restarting server
//     would appear to its clients.
//
// The modes combine: Delay with DropReplies delays the replies it does not
// drop, for example.
//
// # Frames
//
// DropReplies, HoldReplies and Inject work on whole frames. The proxy parses
// the server's stream of every link with resp.Parse, RESP2 and RESP3 alike,
// under the hard maximum resp limits, and decides the fate of a frame when
// its first byte arrives: a frame that started before a mode was set is
// finished the way it started. Attributes belong to the frame they annotate.
// A RESP3 push frame ('>') is not a reply: DropReplies neither drops nor
// counts it, but HoldReplies holds it with the replies so that the order of
// the stream is kept.
//
// The proxy does not know about handshakes: the counts of DropReplies and
// ResetAfter start when they are called. A test that must let a handshake
// (HELLO, AUTH, SELECT) pass sets the mode after the handshake has been
// answered.
//
// When the server's stream of a link cannot be parsed, the proxy stops
// framing that link and forwards the rest of its bytes as they come:
// DropReplies and Inject no longer apply to it, while Blackhole, Delay,
// HoldReplies and ResetAfter still do. A TLS stream is such a stream: the
// proxy forwards its bytes without reading them.
//
// # Concurrency
//
// A Proxy is safe for concurrent use: the mode methods and counters may be
// called from any goroutine while links are forwarding. Modes and counters
// are atomics; each link is forwarded by two goroutines, one per direction,
// which the Proxy owns and Close waits for. Nothing is left running after
// Close, which New registers with t.Cleanup.
//
// # Errors
//
// The proxy reports no errors. New fails the test when it cannot listen, or
// when the upstream address is not on loopback. A failure on a link ends the
// link the way the network would: a read or write error closes both sides,
// a reset from one side resets the other, and an orderly close from one side
// is passed on as a half close once the bytes still queued for that direction
// have been delivered. A link whose upstream cannot be dialed is reset at
// once. An accept error other than the one caused by Close stops the proxy
// from accepting; the links already open go on.
package faultnet
