package conn

import (
	"crypto/sha1"
	"encoding/hex"
)

// Script is a Lua script that is called by its SHA1 digest with EVALSHA.
// When a server answers NOSCRIPT (its script cache was flushed, or it
// restarted), the same call is sent again with EVAL in the same round.
type Script struct {
	// Source is the Lua source.
	Source string
	// SHA is the hex SHA1 digest of Source, as Redis computes it.
	SHA string
}

// NewScript returns the Script for a Lua source.
func NewScript(source string) *Script {
	digest := sha1.Sum([]byte(source))
	return &Script{Source: source, SHA: hex.EncodeToString(digest[:])}
}
