package connection_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/connection"
	"github.com/lockmux/lockmux/redlock/internal/naming"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		options connection.Options
		want    string
	}{
		{name: "zero", options: connection.Options{}},
		{name: "negative dial timeout", options: connection.Options{DialTimeout: -time.Second}, want: "Options.DialTimeout -1s is negative"},
		{name: "unknown protocol", options: connection.Options{Protocol: 7}, want: "Options.Protocol 7 is not 0, 2 or 3"},
		{name: "a space in the client name", options: connection.Options{ClientName: "my service"},
			want: `Options.ClientName "my service" holds a space or a character that is not printable ASCII`},
		{name: "the dial timeout first", options: connection.Options{DialTimeout: -1, Protocol: 7, ClientName: "é"}, want: "Options.DialTimeout -1ns is negative"},
		{name: "the protocol before the name", options: connection.Options{Protocol: 7, ClientName: "é"}, want: "Options.Protocol 7 is not 0, 2 or 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.options.Check()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.want)
		})
	}
}

func TestGroupDefaults(t *testing.T) {
	options := connection.Options{}.Group()
	assert.Equal(t, mux.DefaultDialTimeout, options.DialTimeout)
	assert.Equal(t, naming.DefaultClientName, options.ClientName)
	assert.Equal(t, time.Second, connection.Options{DialTimeout: time.Second}.Group().DialTimeout)
}
