// Package turn is a lock's exclusion within this process: the Turn
// one goroutine at a time has while it acquires, holds and releases. A
// goroutine waiting for a Turn leaves when its context ends or the Client
// closes. It uses atomics, and a channel made only when goroutines
// contend.
package turn
