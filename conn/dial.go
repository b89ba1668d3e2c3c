package conn

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/lockmux/lockmux/resp"
)

// dial connects to the server and performs the handshake within ctx.
// For a master that Redis Sentinel serves, it first asks the sentinels
// where the master is, and the handshake checks that it is one.
func (c *Conn) dial(ctx context.Context) (*link, string, error) {
	address := c.address
	if address.MasterName != "" {
		master, err := c.resolveMaster(ctx)
		if err != nil {
			return nil, "", nodeError(c.name, err)
		}
		address.Addr = master
	}
	netConn, err := c.connect(ctx, address.Network, address.Addr)
	if err != nil {
		return nil, "", nodeError(c.name, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		netConn.SetDeadline(deadline)
	}
	// Close cancels ctx: the handshake must not outlive it.
	stop := context.AfterFunc(ctx, func() { netConn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	handshake := handshake{conn: netConn, reader: resp.NewReader(netConn, c.options.Limits), options: &c.options, address: address}
	protocol, runID, err := handshake.run()
	if err != nil {
		netConn.Close()
		return nil, "", nodeError(c.name, err)
	}
	netConn.SetDeadline(time.Time{})
	return &link{netConn: netConn, reader: handshake.reader, protocol: protocol, received: newReceivedProbe(netConn), address: address.Addr,
		fsyncAlways: handshake.fsyncAlways}, runID, nil
}

// connect opens a connection to addr, with TLS for a rediss address,
// within ctx.
func (c *Conn) connect(ctx context.Context, network, addr string) (net.Conn, error) {
	dialer := net.Dialer{KeepAlive: c.options.KeepAlive, Control: socketControl(c.options.UserTimeout)}
	netConn, err := dialer.DialContext(ctx, network, addr)
	if err != nil || !c.address.TLS {
		return netConn, err
	}
	config := c.options.TLSConfig
	if config == nil {
		config = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if config.ServerName == "" {
		config = config.Clone()
		config.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tlsConn := tls.Client(netConn, config)
	if err := tlsConn.HandshakeContext(ctx); err != nil {
		netConn.Close()
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	return tlsConn, nil
}

// handshake is the conversation that opens a connection: protocol and
// authentication, database, server identity and scripts.
type handshake struct {
	conn    net.Conn
	reader  *resp.Reader
	options *Options
	address Address
	buffer  []byte
	// fsyncAlways is what CONFIG GET appendfsync told, with AskPersistence.
	fsyncAlways bool
}

func (h *handshake) run() (protocol Protocol, runID string, err error) {
	protocol = h.options.Protocol
	if protocol != ProtocolRESP2 {
		protocol, err = h.hello()
		if err != nil {
			return 0, "", err
		}
	}
	if protocol == ProtocolRESP2 {
		if err := h.authenticateRESP2(); err != nil {
			return 0, "", err
		}
	}
	if err := h.prepare(&runID); err != nil {
		return 0, "", err
	}
	return protocol, runID, nil
}

// hello asks for RESP3 with authentication and the client name in one
// round trip. It returns ProtocolRESP2 when the server does not know HELLO
// or RESP3 and the options allow the fallback.
func (h *handshake) hello() (Protocol, error) {
	arguments := []string{"HELLO", "3"}
	if h.options.Password != "" {
		username := h.options.Username
		if username == "" {
			username = "default"
		}
		arguments = append(arguments, "AUTH", username, h.options.Password)
	}
	if h.options.ClientName != "" {
		arguments = append(arguments, "SETNAME", h.options.ClientName)
	}
	h.buffer = resp.AppendCommand(h.buffer[:0], arguments...)
	replies, err := h.roundTrip(1)
	if err != nil {
		return 0, err
	}
	reply := replies[0]
	if !reply.IsError() {
		if reply.Type != resp.TypeMap {
			return 0, fmt.Errorf("%w: HELLO answered %s", ErrUnexpectedReply, reply.Type)
		}
		return ProtocolRESP3, nil
	}
	if err := authError(reply); err != nil {
		return 0, err
	}
	if h.options.Protocol == ProtocolRESP3 {
		return 0, fmt.Errorf("server does not speak RESP3: %w", reply.Err())
	}
	return ProtocolRESP2, nil
}

// authenticateRESP2 sends AUTH and CLIENT SETNAME the RESP2 way.
func (h *handshake) authenticateRESP2() error {
	h.buffer = h.buffer[:0]
	count := 0
	if h.options.Password != "" {
		if h.options.Username != "" {
			h.buffer = resp.AppendCommand(h.buffer, "AUTH", h.options.Username, h.options.Password)
		} else {
			h.buffer = resp.AppendCommand(h.buffer, "AUTH", h.options.Password)
		}
		count++
	}
	if h.options.ClientName != "" {
		h.buffer = resp.AppendCommand(h.buffer, "CLIENT", "SETNAME", h.options.ClientName)
		count++
	}
	if count == 0 {
		return nil
	}
	replies, err := h.roundTrip(count)
	if err != nil {
		return err
	}
	for _, reply := range replies {
		if err := authError(reply); err != nil {
			return err
		}
	}
	if h.options.Password != "" && replies[0].IsError() {
		return fmt.Errorf("%w: %w", ErrAuth, replies[0].Err())
	}
	// A server too old for CLIENT SETNAME still serves locks.
	return nil
}

// prepare selects the database, checks that a Sentinel member's server
// is the master, asks for the run_id and loads the scripts, all in one
// round trip.
func (h *handshake) prepare(runID *string) error {
	h.buffer = h.buffer[:0]
	count := 0
	if h.address.DB != 0 {
		h.buffer = resp.AppendCommand(h.buffer, "SELECT", strconv.Itoa(h.address.DB))
		count++
	}
	if h.address.MasterName != "" {
		h.buffer = resp.AppendCommand(h.buffer, "ROLE")
		count++
	}
	h.buffer = resp.AppendCommand(h.buffer, "INFO", "server")
	count++
	if h.options.AskPersistence {
		h.buffer = resp.AppendCommand(h.buffer, "CONFIG", "GET", "appendfsync")
		count++
	}
	for _, script := range h.options.Scripts {
		h.buffer = resp.AppendCommand(h.buffer, "SCRIPT", "LOAD", script.Source)
		count++
	}
	replies, err := h.roundTrip(count)
	if err != nil {
		return err
	}
	if h.address.DB != 0 {
		if err := authError(replies[0]); err != nil {
			return fmt.Errorf("select %d: %w", h.address.DB, err)
		}
		if replies[0].IsError() {
			return fmt.Errorf("select %d: %w", h.address.DB, replies[0].Err())
		}
		replies = replies[1:]
	}
	if h.address.MasterName != "" {
		if err := checkMaster(replies[0], h.address); err != nil {
			return err
		}
		replies = replies[1:]
	}
	// INFO may be denied by an ACL; the run_id is then unknown.
	if info := replies[0]; !info.IsError() {
		*runID = infoField(info.Str, "run_id")
	}
	replies = replies[1:]
	if h.options.AskPersistence {
		// {appendfsync, always}: an array (RESP2) or a map (RESP3). A
		// refusal leaves it false.
		policy := replies[0]
		h.fsyncAlways = !policy.IsError() && len(policy.Elems) == 2 && string(policy.Elems[1].Str) == "always"
		replies = replies[1:]
	}
	for i, script := range h.options.Scripts {
		reply := replies[i]
		if err := authError(reply); err != nil {
			return err
		}
		if reply.IsError() {
			return fmt.Errorf("script load: %w", reply.Err())
		}
		if string(reply.Str) != script.SHA {
			return fmt.Errorf("%w: SCRIPT LOAD answered %q for a script with SHA %s", ErrUnexpectedReply, reply.Str, script.SHA)
		}
	}
	return nil
}

// roundTrip writes the buffered commands and reads count replies, copied
// out of the reader's buffer. Pushes during the handshake are dropped.
func (h *handshake) roundTrip(count int) ([]resp.Value, error) {
	if _, err := h.conn.Write(h.buffer); err != nil {
		return nil, err
	}
	replies := make([]resp.Value, 0, count)
	for len(replies) < count {
		reply, err := h.reader.ReadReply()
		if err != nil {
			return nil, err
		}
		if reply.Type == resp.TypePush {
			continue
		}
		replies = append(replies, reply.Clone())
	}
	return replies, nil
}

// authError returns an error matching ErrAuth for replies that say the
// credentials or permissions are wrong, and nil for any other reply.
func authError(reply resp.Value) error {
	if !reply.IsError() {
		return nil
	}
	switch string(resp.ErrorCode(reply.Str)) {
	case "NOAUTH", "WRONGPASS", "NOPERM":
		return fmt.Errorf("%w: %w", ErrAuth, reply.Err())
	}
	if bytes.Contains(reply.Str, []byte("invalid password")) {
		return fmt.Errorf("%w: %w", ErrAuth, reply.Err())
	}
	return nil
}

// infoField returns the value of "name:value" in an INFO reply.
func infoField(info []byte, name string) string {
	for len(info) > 0 {
		line := info
		if i := bytes.IndexByte(info, '\n'); i >= 0 {
			line, info = info[:i], info[i+1:]
		} else {
			info = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if value, found := bytes.CutPrefix(line, []byte(name+":")); found {
			return string(value)
		}
	}
	return ""
}
