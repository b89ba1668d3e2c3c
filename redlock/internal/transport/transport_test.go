package transport_test

import (
	"crypto/tls"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/internal/naming"
	"github.com/lockmux/lockmux/redlock/internal/transport"
)

// Every field that redlock.Options and mux.Options share, by name and
// type, reaches the connections: a field added to both is not forgotten.
func TestGroupOptionsCarriesEverySharedField(t *testing.T) {
	options := redlock.Options{
		Username:    "locker",
		Password:    "secret",
		TLSConfig:   &tls.Config{ServerName: "nodes"},
		DialTimeout: 3 * time.Second,
		ClientName:  "tool",
		Protocol:    redlock.ProtocolRESP3,
	}
	groupOptions, err := transport.GroupOptions(options)
	require.NoError(t, err)

	from, to := reflect.ValueOf(options), reflect.ValueOf(groupOptions)
	shared := 0
	for i := range to.NumField() {
		field := to.Type().Field(i)
		source, found := from.Type().FieldByName(field.Name)
		if !found || source.Type != field.Type {
			continue
		}
		shared++
		value := from.FieldByIndex(source.Index)
		require.False(t, value.IsZero(), "set Options.%s in this test, so that its carrying is checked", field.Name)
		assert.Equal(t, value.Interface(), to.Field(i).Interface(), "Options.%s", field.Name)
	}
	assert.Equal(t, 6, shared, "the fields shared by redlock.Options and mux.Options")
}

func TestGroupOptionsDefaults(t *testing.T) {
	groupOptions, err := transport.GroupOptions(redlock.Options{})
	require.NoError(t, err)
	assert.Equal(t, mux.DefaultDialTimeout, groupOptions.DialTimeout)
	assert.Equal(t, naming.DefaultClientName, groupOptions.ClientName)
	assert.Equal(t, redlock.ProtocolAuto, groupOptions.Protocol)
}

// The tools refuse what redlock.New refuses in the fields they use, and
// accept what it accepts.
func TestGroupOptionsValidatesAsNewDoes(t *testing.T) {
	tests := []struct {
		name    string
		options redlock.Options
		valid   bool
	}{
		{name: "zero", options: redlock.Options{}, valid: true},
		{name: "every field", options: redlock.Options{Username: "u", Password: "p", DialTimeout: time.Second, ClientName: "my-service", Protocol: redlock.ProtocolRESP2}, valid: true},
		{name: "negative dial timeout", options: redlock.Options{DialTimeout: -time.Second}},
		{name: "unknown protocol", options: redlock.Options{Protocol: 7}},
		{name: "a space in the client name", options: redlock.Options{ClientName: "my service"}},
		{name: "a client name that is not ASCII", options: redlock.Options{ClientName: "créneau"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, newErr := redlock.New([]string{"127.0.0.1:1"}, tt.options)
			if client != nil {
				client.Close()
			}
			_, err := transport.GroupOptions(tt.options)
			group, groupErr := transport.NewGroup([]string{"127.0.0.1:1"}, tt.options)
			if group != nil {
				group.Close()
			}
			if tt.valid {
				assert.NoError(t, newErr)
				assert.NoError(t, err)
				assert.NoError(t, groupErr)
				return
			}
			assert.ErrorIs(t, newErr, redlock.ErrInvalidOptions)
			assert.ErrorIs(t, err, redlock.ErrInvalidOptions)
			assert.ErrorIs(t, groupErr, redlock.ErrInvalidOptions)
		})
	}
}

func TestNewGroup(t *testing.T) {
	_, err := transport.NewGroup(nil, redlock.Options{})
	assert.ErrorIs(t, err, redlock.ErrInvalidOptions, "no addresses")
	_, err = transport.NewGroup([]string{"redis://[::1"}, redlock.Options{})
	assert.ErrorIs(t, err, redlock.ErrInvalidOptions, "an address that does not parse")

	script := mux.NewScript("return 1")
	group, err := transport.NewGroup([]string{"127.0.0.1:1", "redis://127.0.0.1:1"}, redlock.Options{}, script)
	require.NoError(t, err, "an address given twice is the tool's to examine")
	defer group.Close()
	assert.Equal(t, 2, group.Len())
	assert.Equal(t, group.Address(0), group.Address(1))
}
