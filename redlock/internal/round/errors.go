package round

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lockmux/lockmux/resp"
)

// The errors of a node's outcome. redlock exports the first three under
// the same names; their docs are there.
var (
	ErrNodeUnreachable = errors.New("redlock: node unreachable")
	ErrConfig          = errors.New("redlock: node configuration error")
	ErrFenceCounter    = fmt.Errorf("%w: bad fencing counter", ErrConfig)

	// ErrNotAwaited is the error of a node whose reply was not awaited
	// because the round was already decided. Its outcome is unknown.
	ErrNotAwaited = errors.New("redlock: reply not awaited: the round was already decided")

	// ErrUnexpectedReply is wrapped for replies no version of the scripts gives.
	ErrUnexpectedReply = errors.New("redlock: unexpected reply")
)

// IsConfigError reports whether a server's error reply (such as
// "WRONGPASS invalid username-password pair") is a configuration problem
// that retrying cannot fix. Errors with these replies should match
// ErrConfig. They are told by their code (the first word), and, for the
// refusals of an ACL to a command that a script calls, which have the
// code ERR, by their message: "The user executing the script can't …" up
// to Redis 7.0, "ACL failure in script: …" from 7.2.
func IsConfigError(reply string) bool {
	switch string(resp.ErrorCode([]byte(reply))) {
	case "NOAUTH", "WRONGPASS", "NOPERM", "WRONGTYPE", "READONLY",
		"MOVED", "ASK", "CLUSTERDOWN", "CROSSSLOT":
		return true
	case "ERR":
		return strings.Contains(reply, "The user executing the script can't") || strings.Contains(reply, "ACL failure in script")
	}
	return false
}
