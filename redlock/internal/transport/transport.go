package transport

import (
	"fmt"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/internal/connection"
)

// GroupOptions returns the options of the connections that options ask
// for, as redlock.New makes them for a Client: the credentials, the TLS
// configuration, the dial timeout, the client name and the protocol, a zero
// field taking redlock's default (mux.DefaultDialTimeout, naming.DefaultClientName).
// The other fields of redlock.Options configure locks and play no part. A
// value that redlock.New refuses in one of these fields gives an error
// matching redlock.ErrInvalidOptions that names the field.
func GroupOptions(options redlock.Options) (mux.Options, error) {
	fields := connection.Options{
		Username:    options.Username,
		Password:    options.Password,
		TLSConfig:   options.TLSConfig,
		DialTimeout: options.DialTimeout,
		ClientName:  options.ClientName,
		Protocol:    options.Protocol,
	}
	if err := fields.Check(); err != nil {
		return mux.Options{}, fmt.Errorf("%w: %w", redlock.ErrInvalidOptions, err)
	}
	return fields.Group(), nil
}

// NewGroup returns a mux.Group with one connection to each address, in the
// forms redlock.New accepts, configured by GroupOptions(options), that loads
// scripts whenever it connects. Like mux.New, it does not dial. It fails
// for invalid options, no addresses, and an address that cannot be parsed,
// with an error matching redlock.ErrInvalidOptions. Unlike redlock.New it
// accepts an address given twice: a tool may have to examine such a list.
func NewGroup(addresses []string, options redlock.Options, scripts ...*mux.Script) (*mux.Group, error) {
	groupOptions, err := GroupOptions(options)
	if err != nil {
		return nil, err
	}
	if len(addresses) == 0 {
		return nil, fmt.Errorf("%w: no addresses", redlock.ErrInvalidOptions)
	}
	groupOptions.Scripts = scripts
	group, err := mux.New(addresses, groupOptions)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", redlock.ErrInvalidOptions, err)
	}
	return group, nil
}
