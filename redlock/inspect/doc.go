// Package inspect reads what the nodes of a lockmux deployment hold,
// without changing anything: an Inspector, made once from the addresses
// and the redlock.Options of a Client, tells who holds a lock on every
// node and whether a quorum does (Status), and lists the lock keys with
// their TTLs, so that keys without one, which block a lock forever, can be
// found (Scan). The commands "redlock status" and "redlock scan" print
// them.
//
//	inspector, err := inspect.New(addresses, redlock.Options{})
//	if err != nil { … }
//	defer inspector.Close()
//	status, err := inspector.Status(ctx, "orders:1001")
//	if status.Locked() { fmt.Println("held by", status.Holder) }
//
// An Inspector keeps one connection per node, dialled when first used, so
// that a service that polls the state of its locks does not dial the
// nodes, authenticate and negotiate TLS again for every look.
//
// # Concurrency
//
// An Inspector is safe for concurrent use. It owns its connections, which
// Close closes. A context bounds how long its caller waits, nothing else:
// when it ends, Status and Scan return at once with an error that matches
// the context's, and the commands already sent are answered without them.
//
// # Errors
//
// New fails with an error matching redlock.ErrInvalidOptions for invalid
// options, no addresses, or an address that cannot be parsed, and with one
// matching redlock.ErrDuplicateNode for an address given twice. Status and
// Scan return ErrClosed after Close. Otherwise the failure of a single node
// (unreachable, an error reply, no answer in time) is no error of the call:
// it is in that node's part of the report, wrapped with the node's address.
package inspect
