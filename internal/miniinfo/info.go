package miniinfo

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// Install makes m answer INFO server, replication, persistence, stats and
// commandstats. Its run_id and replication ID are drawn at random, its
// uptime counts from the call, and commandstats counts the commands m
// received from then on, those run by scripts included. It replaces any
// hook set with m.Server().SetPreHook. Call it after m.Start.
func Install(m *miniredis.Miniredis) {
	info := &serverInfo{runID: randomID(), replicationID: randomID(), started: time.Now(), calls: map[string]int{}}
	m.Server().SetPreHook(info.hook)
}

// serverInfo is what one server's INFO tells.
type serverInfo struct {
	runID, replicationID string
	started              time.Time

	mutex sync.Mutex
	calls map[string]int // by lower-case name, "config|resetstat" for a subcommand
}

// hook counts each command and answers INFO with a section it knows.
func (s *serverInfo) hook(peer *server.Peer, command string, arguments ...string) bool {
	name := strings.ToLower(command)
	if len(arguments) > 0 && (name == "config" || name == "cluster" || name == "client") {
		name += "|" + strings.ToLower(arguments[0])
	}
	s.mutex.Lock()
	s.calls[name]++
	s.mutex.Unlock()
	if name != "info" || len(arguments) != 1 {
		return false
	}
	text, known := s.section(strings.ToLower(arguments[0]))
	if known {
		peer.WriteBulk(text)
	}
	return known
}

// section returns the text of one INFO section, and whether it is one
// this package answers.
func (s *serverInfo) section(name string) (string, bool) {
	switch name {
	case "server":
		return fmt.Sprintf("# Server\r\nredis_version:7.0.0\r\nredis_mode:standalone\r\nrun_id:%s\r\nuptime_in_seconds:%d\r\n",
			s.runID, int(time.Since(s.started).Seconds())), true
	case "replication":
		return fmt.Sprintf("# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_replid:%s\r\n"+
			"master_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\n",
			s.replicationID), true
	case "persistence":
		return "# Persistence\r\nloading:0\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\naof_rewrites:0\r\n", true
	case "stats":
		return "# Stats\r\nexpired_keys:0\r\nevicted_keys:0\r\n", true
	case "commandstats":
		s.mutex.Lock()
		defer s.mutex.Unlock()
		names := make([]string, 0, len(s.calls))
		for name := range s.calls {
			names = append(names, name)
		}
		sort.Strings(names)
		var text strings.Builder
		text.WriteString("# Commandstats\r\n")
		for _, name := range names {
			fmt.Fprintf(&text, "cmdstat_%s:calls=%d,usec=0,usec_per_call=0.00,rejected_calls=0,failed_calls=0\r\n", name, s.calls[name])
		}
		return text.String(), true
	}
	return "", false
}

// randomID returns 40 random hexadecimal digits, as Redis's IDs have.
func randomID() string {
	var bytes [20]byte
	_, _ = rand.Read(bytes[:])
	return hex.EncodeToString(bytes[:])
}
