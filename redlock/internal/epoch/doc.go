// Package epoch reads the epoch markers of the quarantine
// (redlock.Options.Quarantine) as more than one package must: redlock,
// which writes them, and the operations tools under it (doctor, inspect),
// which only read them. It holds the script that reads a marker's age, and
// the asking of every master of a Redis Cluster node, each of which keeps
// a marker of its own.
//
// # Concurrency
//
// AskMasters is safe for concurrent use, as the Group it is given is.
//
// # Errors
//
// AskMasters returns the Group's errors: the cluster's masters could not
// be learned, or the requests could not be sent or answered.
package epoch
