package manyholds

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/lockmux/lockmux/mux"
)

// commandCounter reads how many commands the nodes processed, on
// connections of its own.
type commandCounter struct {
	group   *mux.Group
	request *mux.Request
}

func newCommandCounter(addresses []string) (*commandCounter, error) {
	group, err := mux.New(addresses, mux.Options{})
	if err != nil {
		return nil, err
	}
	return &commandCounter{group: group, request: mux.NewRequest("INFO", "stats", "commandstats")}, nil
}

// commandCount is what the nodes processed so far, summed over them.
type commandCount struct {
	// all counts every command, those that scripts call included
	// (total_commands_processed); scripts counts the scripts run (EVAL
	// and EVALSHA calls), which are the commands a renewal sends.
	all, scripts uint64
}

// scriptCalls are the fields of INFO commandstats that count scripts run.
var scriptCalls = []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="}

// count reads the nodes' counts.
func (c *commandCounter) count(ctx context.Context) (commandCount, error) {
	var sum commandCount
	for i := range c.group.Len() {
		if err := c.group.Do(ctx, i, c.request); err != nil {
			return sum, fmt.Errorf("manyholds: INFO: %w", err)
		}
		info := c.request.Reply().Str
		n, err := infoCount(info, "total_commands_processed:")
		if err != nil {
			return sum, fmt.Errorf("manyholds: INFO of %s: %w", c.group.Address(i), err)
		}
		sum.all += n
		for _, field := range scriptCalls {
			if n, err := infoCount(info, field); err == nil {
				sum.scripts += n
			}
		}
	}
	return sum, nil
}

// infoCount reads the number of a field of an INFO reply.
func infoCount(info []byte, field string) (uint64, error) {
	at := bytes.Index(info, []byte(field))
	if at < 0 {
		return 0, fmt.Errorf("no %s", field)
	}
	value := info[at+len(field):]
	if end := bytes.IndexAny(value, ",\r\n"); end >= 0 {
		value = value[:end]
	}
	return strconv.ParseUint(string(value), 10, 64)
}

func (c *commandCounter) close() { _ = c.group.Close() }
