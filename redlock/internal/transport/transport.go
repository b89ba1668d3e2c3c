package transport

import (
	"fmt"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock"
	"github.com/lockmux/lockmux/redlock/internal/connection"
)

// GroupOptions returns the connection options that options ask for, as
// redlock.New makes them, zero fields taking redlock's defaults. An
// invalid field gives an error matching redlock.ErrInvalidOptions.
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

// NewGroup returns a mux.Group over addresses, as redlock.New accepts them,
// that loads scripts on connect; it does not dial. Invalid input gives
// redlock.ErrInvalidOptions. Unlike redlock.New, it accepts an address
// given twice.
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
