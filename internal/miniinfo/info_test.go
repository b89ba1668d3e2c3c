package miniinfo

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run sends one command in RESP and returns the raw reply.
func run(t *testing.T, address string, arguments ...string) string {
	t.Helper()
	connection, err := net.Dial("tcp", address)
	require.NoError(t, err)
	defer connection.Close()
	var command strings.Builder
	command.WriteString("*" + strconv.Itoa(len(arguments)) + "\r\n")
	for _, argument := range arguments {
		command.WriteString("$" + strconv.Itoa(len(argument)) + "\r\n" + argument + "\r\n")
	}
	_, err = connection.Write([]byte(command.String()))
	require.NoError(t, err)
	buffer := make([]byte, 4096)
	n, err := connection.Read(buffer)
	require.NoError(t, err)
	return string(buffer[:n])
}

// runID returns the run_id line of an INFO server reply.
func runID(reply string) string {
	start := strings.Index(reply, "run_id:")
	return reply[start : start+strings.Index(reply[start:], "\r")]
}

func TestInstallAnswersTheSectionsTheQuarantineReads(t *testing.T) {
	m := miniredis.RunT(t)
	Install(m)
	assert.Contains(t, run(t, m.Addr(), "INFO", "server"), "run_id:")
	assert.Contains(t, run(t, m.Addr(), "INFO", "replication"), "role:master\r\n")
	assert.Contains(t, run(t, m.Addr(), "INFO", "persistence"), "aof_enabled:0\r\n")
	assert.Contains(t, run(t, m.Addr(), "INFO", "stats"), "evicted_keys:0\r\n")
	assert.NotContains(t, run(t, m.Addr(), "INFO", "commandstats"), "cmdstat_flushall:")
	run(t, m.Addr(), "FLUSHALL")
	assert.Contains(t, run(t, m.Addr(), "INFO", "commandstats"), "cmdstat_flushall:calls=1,")
	assert.Contains(t, run(t, m.Addr(), "EVAL", "return redis.call('INFO', 'commandstats')", "0"), "cmdstat_flushall:calls=1,")
}

func TestInstallKeepsTheIdentityOfTheServer(t *testing.T) {
	m := miniredis.RunT(t)
	Install(m)
	first := runID(run(t, m.Addr(), "INFO", "server"))
	other := miniredis.RunT(t)
	Install(other)
	assert.Len(t, first, len("run_id:")+40)
	assert.Equal(t, first, runID(run(t, m.Addr(), "INFO", "server")))
	assert.NotEqual(t, first, runID(run(t, other.Addr(), "INFO", "server")))
}
