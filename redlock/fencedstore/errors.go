package fencedstore

import "errors"

// errUnexpectedReply is wrapped for a reply that fenced_set.lua never gives.
var errUnexpectedReply = errors.New("fencedstore: unexpected reply")
