// Package internal holds no code: it is the tour of the lock package's
// engine, one Lock in the order the algorithm runs it.
//
//  1. Exclusion in this process. Mutex.Lock takes the Mutex's turn
//     (turn): one goroutine of the process acquires at a time.
//  2. The command. Mutex.attempt (redlock/acquire.go) draws a token and
//     writes the acquisition into a round the Client lends it while it
//     runs (round: lender.go, round.go): its row of the protocol table
//     (round/table.go) names its keys and arguments (round/parts.go) and
//     its script (protocol).
//  3. The round. mux.Group.Send writes the command to every node at once,
//     each on its one connection (conn); with the quarantine on, the read
//     of the node's marker follows each vote in the same write.
//  4. The replies. mux.Group.Wait hands each reply to the tally
//     (round/tally.go), which reads it by its row (protocol) and asks the
//     quarantine (quarantine) whether the vote counts.
//  5. The quorum. A quorum of votes and a positive validity, the TTL less
//     the time spent and the drift allowance (round/quorum.go), make a
//     hold (redlock/hold.go, liveness). Its end is watched (liveness), its
//     renewal scheduled (liveness) and sent (redlock/liveness.go), its keys
//     watched for cuts (liveness).
//  6. The wait. A failed attempt releases what it set, and the Mutex waits
//     in waiting.Waiter.Retry (waiting/retry.go), the one retry loop of
//     Mutex and Semaphore: for its retry delay, or until a quorum announces
//     a release of its key. A fair Mutex keeps a place in line meanwhile
//     (redlock/wait.go).
//  7. The release. Mutex.Unlock (redlock/release.go) ends the hold and
//     sends the release, which the transport finishes whoever waits; a
//     waiter of this process is woken at once.
package internal
