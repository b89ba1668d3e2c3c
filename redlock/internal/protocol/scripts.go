package protocol

import (
	"embed"
	"strings"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/decimal"
)

//go:embed scripts/*.lua
var sources embed.FS

// The scripts, each documented in the header of its file under scripts/.
// The fencing scripts start with decimal.Lua: fences never pass through a
// Lua number.
var (
	AcquireMulti        = load("acquire_multi.lua")
	AcquireWaiting      = load("acquire_waiting.lua")
	AcquireFenced       = load("acquire_fenced.lua", decimal.Lua)
	CommitFence         = load("commit_fence.lua", decimal.Lua)
	Release             = load("release.lua")
	Extend              = load("extend.lua")
	Repair              = load("repair.lua")
	Check               = load("check.lua")
	Watch               = load("watch.lua")
	AcquireWrite        = load("acquire_write.lua", decimal.Lua)
	AcquireRead         = load("acquire_read.lua")
	ReleaseRead         = load("release_read.lua")
	ExtendRead          = load("extend_read.lua")
	RepairRead          = load("repair_read.lua")
	CheckRead           = load("check_read.lua")
	AcquireFair         = load("acquire_fair.lua", decimal.Lua)
	FairTicket          = load("fair_ticket.lua")
	FairEnqueue         = load("fair_enqueue.lua")
	FairLeave           = load("fair_leave.lua")
	ReleaseFair         = load("release_fair.lua")
	ForceRelease        = load("force_release.lua")
	AcquirePermit       = load("acquire_permit.lua")
	AcquirePermitFenced = load("acquire_permit_fenced.lua", decimal.Lua)
	PermitsFree         = load("permits_free.lua")
)

// load returns the script of file, after prefix.
func load(file string, prefix ...string) *mux.Script {
	source, err := sources.ReadFile("scripts/" + file)
	if err != nil {
		panic("protocol: " + err.Error()) // embedded: cannot happen
	}
	return NewScript(strings.Join(prefix, "") + string(source))
}

// NewScript returns the script for a Lua source without its comment
// lines: the nodes get only the code, which EVAL sends whole.
func NewScript(source string) *mux.Script {
	var code strings.Builder
	for line := range strings.Lines(source) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			code.WriteString(line)
		}
	}
	return mux.NewScript(code.String())
}

// FenceErrorCode is the code of a fencing script's error reply for a
// counter, or a fence, that is not a decimal integer in range.
const FenceErrorCode = "FENCE"

// Replies of Extend.
const (
	ExtendExtended = 1  // every key held the token and was extended
	ExtendMissing  = 0  // a key was missing; nothing changed
	ExtendHeld     = -1 // a key holds another token; nothing changed
)

// Replies of Check other than a remaining TTL.
const (
	CheckPersistent = -1 // every key holds the token, one without a TTL
	CheckMissing    = -2 // a key is missing or expired
	CheckHeld       = -3 // a key holds another token
)
