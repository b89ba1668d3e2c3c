// Package round is the lock package's round: one command for every node
// and the count of the replies. Its protocol table (table.go) says, per
// command, the keys and arguments it writes (parts.go), its script, and
// what its replies mean; a Round writes any row (Start), sends it through
// mux, and its Tally reads each reply, asks the quarantine whether a vote
// counts, and decides the round by quorum (quorum.go, with the validity
// and drift of a hold). A Lender lends a Client's locks their rounds.
// Nothing here blocks but Round.Gather; a Round and its Tally belong to
// one goroutine at a time, and the Lender has one mutex.
package round
