package connection

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/mux"
	"github.com/lockmux/lockmux/redlock/internal/naming"
)

// Options are redlock.Options' connection fields, under the same names.
type Options struct {
	Username    string
	Password    string
	TLSConfig   *tls.Config
	DialTimeout time.Duration // zero means mux.DefaultDialTimeout
	ClientName  string        // "" means naming.DefaultClientName
	Protocol    mux.Protocol
}

// Check returns the error of the first invalid field, in the order
// DialTimeout, Protocol, ClientName, or nil.
func (o Options) Check() error {
	if err := CheckDialTimeout(o.DialTimeout); err != nil {
		return err
	}
	if err := CheckProtocol(o.Protocol); err != nil {
		return err
	}
	return CheckClientName(cmp.Or(o.ClientName, naming.DefaultClientName))
}

// CheckDialTimeout refuses a negative dial timeout.
func CheckDialTimeout(dialTimeout time.Duration) error {
	if dialTimeout < 0 {
		return fmt.Errorf("Options.DialTimeout %v is negative", dialTimeout)
	}
	return nil
}

// CheckProtocol refuses an unknown protocol.
func CheckProtocol(protocol mux.Protocol) error {
	if protocol != mux.ProtocolAuto && protocol != mux.ProtocolRESP2 && protocol != mux.ProtocolRESP3 {
		return fmt.Errorf("Options.Protocol %v is not 0, 2 or 3", protocol)
	}
	return nil
}

// CheckClientName refuses a name CLIENT SETNAME would refuse.
func CheckClientName(clientName string) error {
	for i := 0; i < len(clientName); i++ {
		if clientName[i] <= ' ' || clientName[i] > '~' {
			return fmt.Errorf("Options.ClientName %q holds a space or a character that is not printable ASCII", clientName)
		}
	}
	return nil
}

// Group returns the connections' mux.Options with defaults, unchecked.
func (o Options) Group() mux.Options {
	return mux.Options{
		Username:    o.Username,
		Password:    o.Password,
		TLSConfig:   o.TLSConfig,
		DialTimeout: cmp.Or(o.DialTimeout, mux.DefaultDialTimeout),
		ClientName:  cmp.Or(o.ClientName, naming.DefaultClientName),
		Protocol:    o.Protocol,
	}
}
