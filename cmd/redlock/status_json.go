package main

import (
	"github.com/lockmux/lockmux/redlock/inspect"
)

// The JSON objects of "redlock status --json". docs/json.md is their
// schema: a change of a name or a meaning here is a change there, and
// breaks the scripts that read them.

// lockStatusJSON is what status --json prints for a lock, and for each
// permit of a semaphore and the writer of a read/write lock.
type lockStatusJSON struct {
	Key string `json:"key"`
	// State is lockState's: locked, free, split or unknown.
	State    string `json:"state"`
	Quorum   int    `json:"quorum"`
	Answered int    `json:"answered"`
	// TokenPrefix is the prefix of the token that the most nodes hold,
	// and Holders their number.
	TokenPrefix string         `json:"token_prefix"`
	Holders     int            `json:"holders"`
	Metadata    string         `json:"metadata"`
	Waiting     int            `json:"waiting"`
	Nodes       []nodeLockJSON `json:"nodes"`
}

// nodeLockJSON is one node's part of a lockStatusJSON.
type nodeLockJSON struct {
	Address     string `json:"address"`
	Held        bool   `json:"held"`
	TokenPrefix string `json:"token_prefix"`
	Metadata    string `json:"metadata"`
	TTL         int64  `json:"ttl_ms"`
	Persistent  bool   `json:"persistent"`
	Fence       int64  `json:"fence"`
	Waiting     int    `json:"waiting"`
	// EpochAge is null when the node has no epoch marker of its server
	// process, or its state is unknown.
	EpochAge *int64 `json:"epoch_age_ms"`
	Error    string `json:"error"`
}

func newLockStatusJSON(lock inspect.LockStatus) lockStatusJSON {
	status := lockStatusJSON{Key: lock.Key, State: lockState(lock), Quorum: lock.Need, Answered: lock.Answered,
		TokenPrefix: lock.Holder, Holders: lock.Holders, Metadata: lock.Metadata, Waiting: lock.Waiting,
		Nodes: make([]nodeLockJSON, len(lock.Nodes))}
	for n, node := range lock.Nodes {
		status.Nodes[n] = nodeLockJSON{Address: node.Address, Held: node.Held, TokenPrefix: node.TokenPrefix,
			Metadata: node.Metadata, TTL: node.TTL.Milliseconds(), Persistent: node.Persistent, Fence: node.Fence,
			Waiting: node.Waiting, Error: errorText(node.Err)}
		if node.Err == nil && node.EpochAge >= 0 {
			age := node.EpochAge.Milliseconds()
			status.Nodes[n].EpochAge = &age
		}
	}
	return status
}

// semaphoreStatusJSON is what status --json --semaphore N prints.
type semaphoreStatusJSON struct {
	Name string `json:"name"`
	// State is semaphoreState's: full, available or unknown.
	State   string           `json:"state"`
	Limit   int              `json:"limit"`
	Held    int              `json:"held"`
	Permits []lockStatusJSON `json:"permits"`
}

func newSemaphoreStatusJSON(semaphore inspect.SemaphoreStatus, limit int) semaphoreStatusJSON {
	status := semaphoreStatusJSON{Name: semaphore.Name, State: semaphoreState(semaphore, limit), Limit: limit,
		Held: semaphore.Held(), Permits: make([]lockStatusJSON, len(semaphore.Permits))}
	for p, permit := range semaphore.Permits {
		status.Permits[p] = newLockStatusJSON(permit)
	}
	return status
}

// rwStatusJSON is what status --json --rw prints.
type rwStatusJSON struct {
	Name string `json:"name"`
	// State is readWriteState's: written, read, free or unknown.
	State     string            `json:"state"`
	ReadHolds int               `json:"read_holds"`
	Writer    lockStatusJSON    `json:"writer"`
	Readers   []nodeReadersJSON `json:"readers"`
}

// nodeReadersJSON is one node's readers of a read/write lock.
type nodeReadersJSON struct {
	Address string `json:"address"`
	// Count is the number of live readers' entries, or -1 when unknown.
	Count int    `json:"count"`
	Error string `json:"error"`
}

func newRWStatusJSON(status inspect.RWStatus, name string) rwStatusJSON {
	rw := rwStatusJSON{Name: name, State: readWriteState(status), ReadHolds: status.ReadHolds,
		Writer: newLockStatusJSON(status.Writer), Readers: make([]nodeReadersJSON, len(status.Readers))}
	for n, count := range status.Readers {
		rw.Readers[n] = nodeReadersJSON{Address: status.Writer.Nodes[n].Address, Count: count, Error: errorText(status.ReaderErrs[n])}
	}
	return rw
}

// errorText is err's message, or "" for nil.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
