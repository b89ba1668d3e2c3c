// Package round is the lock package's round: one command for every node
// and the count of the replies. It decides a round by quorum (quorum.go,
// with the validity and drift of a hold). It holds no state.
package round
