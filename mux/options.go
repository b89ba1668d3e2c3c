package mux

import (
	"crypto/tls"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/resp"
)

// Protocol is a version of the protocol the connections speak. It is
// conn's type: the one definition, which redlock uses too.
type Protocol = conn.Protocol

// Protocol versions for Options.Protocol.
const (
	// ProtocolAuto asks for RESP3 and falls back to RESP2.
	ProtocolAuto = conn.ProtocolAuto
	// ProtocolRESP2 speaks RESP2 only.
	ProtocolRESP2 = conn.ProtocolRESP2
	// ProtocolRESP3 requires RESP3; a server without it is an error.
	ProtocolRESP3 = conn.ProtocolRESP3
)

// Defaults of Options. A zero field of Options means its default.
const (
	// DefaultDialTimeout bounds one dial with its handshake.
	DefaultDialTimeout = conn.DefaultDialTimeout
	// DefaultRequestTimeout bounds the wait for the reply to a Request.
	DefaultRequestTimeout = conn.DefaultCommandTimeout
)

// Options configures the connections of a Group. The zero value is usable.
type Options struct {
	// Username and Password authenticate the connections. They override
	// the user information of the addresses.
	Username, Password string
	// TLSConfig is used for rediss:// addresses; nil means a default
	// configuration that verifies the servers against the system roots.
	TLSConfig *tls.Config
	// DialTimeout bounds one dial with its handshake (DefaultDialTimeout).
	DialTimeout time.Duration
	// RequestTimeout bounds the wait for the reply to a Request
	// (DefaultRequestTimeout). Rounds have the deadline given to Send.
	RequestTimeout time.Duration
	// ClientName is sent with SETNAME when not empty.
	ClientName string
	// Protocol is ProtocolAuto, ProtocolRESP2 or ProtocolRESP3.
	Protocol Protocol
	// Limits bound what the reply parser accepts; zero fields are the
	// resp defaults.
	Limits resp.Limits
	// Scripts are loaded by every connection when it connects.
	Scripts []*Script
	// OnConnect is called after each successful handshake with a server
	// of node, with the server's address (Group.Address of a
	// node that is one server; the address of one of its masters for a
	// Redis Cluster) and run_id, before the connection carries a command.
	// It must not block or call back into the Group.
	OnConnect func(node int, server, runID string)
	// OnUnfinished is told of each carried command (see Round.Carry) that
	// could not be finished on a server, with the server's address, the
	// command's label and why. It must not block.
	OnUnfinished func(address, label string, err error)
	// AskPersistence makes each handshake ask the server's appendfsync
	// (see Group.FsyncAlways).
	AskPersistence bool
}

func (o Options) withDefaults() Options {
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	return o
}

// connOptions returns the options of one connection of node.
func (o Options) connOptions(node int) conn.Options {
	options := conn.Options{
		Username:       o.Username,
		Password:       o.Password,
		TLSConfig:      o.TLSConfig,
		DialTimeout:    o.DialTimeout,
		CommandTimeout: o.RequestTimeout,
		ClientName:     o.ClientName,
		Protocol:       o.Protocol,
		Limits:         o.Limits,
		AskPersistence: o.AskPersistence,
	}
	for _, script := range o.Scripts {
		options.Scripts = append(options.Scripts, script.script)
	}
	if onConnect := o.OnConnect; onConnect != nil {
		options.OnConnect = func(server, runID string) { onConnect(node, server, runID) }
	}
	if onUnfinished := o.OnUnfinished; onUnfinished != nil {
		options.OnUnfinished = func(address string, unfinished conn.Unfinished) {
			onUnfinished(address, unfinished.Label, unfinished.Err)
		}
	}
	return options
}
