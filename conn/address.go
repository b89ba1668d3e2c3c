package conn

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Address is a parsed server address.
type Address struct {
	// Network is "tcp" or "unix".
	Network string
	// Addr is "host:port" for tcp, or the socket path for unix.
	Addr string
	// TLS is set for the rediss:// scheme.
	TLS bool
	// Username and Password come from the URL's user information.
	Username, Password string
	// DB is the database number from the URL's path; 0 when absent.
	DB int
}

// String returns the address without its password, for messages.
func (a Address) String() string {
	switch {
	case a.Network == "unix":
		return "unix://" + a.Addr
	case a.TLS:
		return "rediss://" + a.Addr
	default:
		return a.Addr
	}
}

// ParseAddress parses a server address in one of the forms "host:port",
// "redis://[user:password@]host:port[/db]", "rediss://…" (TLS) and
// "unix:///path/to/socket". A missing port means 6379.
func ParseAddress(s string) (Address, error) {
	if s == "" {
		return Address{}, fmt.Errorf("%w: empty address", ErrInvalidAddress)
	}
	if !strings.Contains(s, "://") {
		host, port, err := splitHostPort(s)
		if err != nil {
			return Address{}, fmt.Errorf("%w: %q: %v", ErrInvalidAddress, s, err)
		}
		return Address{Network: "tcp", Addr: net.JoinHostPort(host, port)}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return Address{}, fmt.Errorf("%w: %q: %v", ErrInvalidAddress, redactURL(s), err)
	}
	var a Address
	switch u.Scheme {
	case "unix":
		if u.Path == "" || u.Host != "" {
			return Address{}, fmt.Errorf("%w: %q: want unix:///path/to/socket", ErrInvalidAddress, s)
		}
		return Address{Network: "unix", Addr: u.Path}, nil
	case "redis":
	case "rediss":
		a.TLS = true
	default:
		return Address{}, fmt.Errorf("%w: %q: unknown scheme %q (want redis, rediss or unix)", ErrInvalidAddress, redactURL(s), u.Scheme)
	}
	host, port, err := splitHostPort(u.Host)
	if err != nil {
		return Address{}, fmt.Errorf("%w: %q: %v", ErrInvalidAddress, redactURL(s), err)
	}
	a.Network = "tcp"
	a.Addr = net.JoinHostPort(host, port)
	if u.User != nil {
		a.Username = u.User.Username()
		a.Password, _ = u.User.Password()
		if _, hasPassword := u.User.Password(); !hasPassword {
			// redis://password@host is the common short form.
			a.Password, a.Username = a.Username, ""
		}
	}
	if path := strings.TrimPrefix(u.Path, "/"); path != "" {
		db, err := strconv.Atoi(path)
		if err != nil || db < 0 {
			return Address{}, fmt.Errorf("%w: %q: database %q is not a number", ErrInvalidAddress, redactURL(s), path)
		}
		a.DB = db
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Address{}, fmt.Errorf("%w: %q: query and fragment are not supported", ErrInvalidAddress, redactURL(s))
	}
	return a, nil
}

func splitHostPort(hostPort string) (host, port string, err error) {
	if hostPort == "" {
		return "", "", fmt.Errorf("missing host")
	}
	host, port, err = net.SplitHostPort(hostPort)
	if err != nil {
		// No port: "host" or "[::1]".
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostPort, "["), "]"), "6379"
		if strings.ContainsAny(host, "[]") || strings.Count(host, ":") == 1 {
			return "", "", err
		}
	}
	if host == "" {
		return "", "", fmt.Errorf("missing host")
	}
	number, err := strconv.Atoi(port)
	if err != nil || number <= 0 || number > 65535 {
		return "", "", fmt.Errorf("bad port %q", port)
	}
	return host, port, nil
}

// redactURL hides a password in an address before it goes into a message.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if i := strings.LastIndex(s, "@"); i >= 0 {
			if j := strings.Index(s, "://"); j >= 0 && j < i {
				return s[:j+3] + "xxxxx" + s[i:]
			}
		}
		return s
	}
	return u.Redacted()
}
