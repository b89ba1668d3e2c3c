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
	// MasterName, for the redis-sentinel:// and rediss-sentinel://
	// schemes, names the master that the sentinels at Sentinels
	// ("host:port", the URL's host first, then its addr parameters) serve:
	// each dial asks them where it is, and Addr is empty.
	MasterName string
	Sentinels  []string
	// SentinelUsername and SentinelPassword, from the sentinel_username
	// and sentinel_password parameters, authenticate to the sentinels;
	// Username and Password are the master's.
	SentinelUsername, SentinelPassword string
	// Cluster, for the redis-cluster:// and rediss-cluster:// schemes, says
	// that the address is a Redis Cluster, which one Conn cannot reach:
	// Seeds ("host:port", the URL's host first, then its addr parameters)
	// are nodes of it that tell where its slots are, and Addr is empty
	// (see mux.New).
	Cluster bool
	Seeds   []string
}

// String returns the address without its password, for messages.
func (a Address) String() string {
	switch {
	case a.Cluster && a.TLS:
		return "rediss-cluster://" + a.Seeds[0]
	case a.Cluster:
		return "redis-cluster://" + a.Seeds[0]
	case a.MasterName != "" && a.TLS:
		return "rediss-sentinel://" + a.Sentinels[0] + "/" + a.MasterName
	case a.MasterName != "":
		return "redis-sentinel://" + a.Sentinels[0] + "/" + a.MasterName
	case a.Network == "unix":
		return "unix://" + a.Addr
	case a.TLS:
		return "rediss://" + a.Addr
	default:
		return a.Addr
	}
}

// ParseAddress parses a server address: "host:port",
// "redis://[user:password@]host:port[/db]", "rediss://…" (TLS),
// "unix:///path/to/socket", a master that Redis Sentinel serves,
// "redis-sentinel://[user:password@]host:port/master-name[?addr=host:port&…]",
// or a Redis Cluster, "redis-cluster://[user:password@]host:port[?addr=host:port&…]".
// rediss-sentinel:// and rediss-cluster:// use TLS. docs/deployments.md
// gives the parameters. A missing port means 6379, or 26379 for a
// sentinel. An address it cannot parse fails with ErrInvalidAddress.
func ParseAddress(s string) (Address, error) {
	if s == "" {
		return Address{}, fmt.Errorf("%w: empty address", ErrInvalidAddress)
	}
	if !strings.Contains(s, "://") {
		host, port, err := splitHostPort(s, "6379")
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
	case "redis-sentinel", "rediss-sentinel":
		return parseSentinelAddress(s, u)
	case "redis-cluster", "rediss-cluster":
		return parseClusterAddress(s, u)
	default:
		return Address{}, fmt.Errorf("%w: %q: unknown scheme %q (want redis, rediss, unix, redis-sentinel, rediss-sentinel, "+
			"redis-cluster or rediss-cluster)", ErrInvalidAddress, redactURL(s), u.Scheme)
	}
	host, port, err := splitHostPort(u.Host, "6379")
	if err != nil {
		return Address{}, fmt.Errorf("%w: %q: %v", ErrInvalidAddress, redactURL(s), err)
	}
	a.Network = "tcp"
	a.Addr = net.JoinHostPort(host, port)
	a.Username, a.Password = userInformation(u)
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

// parseSentinelAddress parses the URL u of a redis-sentinel:// or
// rediss-sentinel:// address s.
func parseSentinelAddress(s string, u *url.URL) (Address, error) {
	a := Address{Network: "tcp", TLS: u.Scheme == "rediss-sentinel", MasterName: strings.TrimPrefix(u.Path, "/")}
	if a.MasterName == "" || strings.Contains(a.MasterName, "/") {
		return Address{}, fmt.Errorf("%w: %q: want %s://host:port/master-name", ErrInvalidAddress, redactURL(s), u.Scheme)
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil || u.Fragment != "" {
		return Address{}, fmt.Errorf("%w: %q: a query of addr parameters only, and no fragment", ErrInvalidAddress, redactURL(s))
	}
	for name, values := range query {
		switch {
		case name == "sentinel_username" || name == "sentinel_password":
			if len(values) != 1 {
				return Address{}, fmt.Errorf("%w: %q: %s given %d times", ErrInvalidAddress, redactURL(s), name, len(values))
			}
		case name != "addr":
			return Address{}, fmt.Errorf("%w: %q: unknown parameter %q (want addr=host:port, once per sentinel, "+
				"and sentinel_username and sentinel_password)", ErrInvalidAddress, redactURL(s), name)
		}
	}
	a.SentinelUsername, a.SentinelPassword = query.Get("sentinel_username"), query.Get("sentinel_password")
	if a.Sentinels, err = hostAndAddrs(s, u, query, "sentinel", "26379"); err != nil {
		return Address{}, err
	}
	a.Username, a.Password = userInformation(u)
	return a, nil
}

// hostAndAddrs returns the "host:port" of u's host, then of each of its
// addr parameters, what names them in messages, with defaultPort where
// they give none.
func hostAndAddrs(s string, u *url.URL, query url.Values, what, defaultPort string) ([]string, error) {
	var hostPorts []string
	for _, given := range append([]string{u.Host}, query["addr"]...) {
		host, port, err := splitHostPort(given, defaultPort)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %s %q: %v", ErrInvalidAddress, redactURL(s), what, given, err)
		}
		hostPorts = append(hostPorts, net.JoinHostPort(host, port))
	}
	return hostPorts, nil
}

// parseClusterAddress parses the URL u of a redis-cluster:// or
// rediss-cluster:// address s.
func parseClusterAddress(s string, u *url.URL) (Address, error) {
	a := Address{Network: "tcp", TLS: u.Scheme == "rediss-cluster", Cluster: true}
	if u.Path != "" && u.Path != "/" {
		return Address{}, fmt.Errorf("%w: %q: a cluster has no database number: want %s://host:port", ErrInvalidAddress, redactURL(s), u.Scheme)
	}
	query, err := url.ParseQuery(u.RawQuery)
	if err != nil || u.Fragment != "" {
		return Address{}, fmt.Errorf("%w: %q: a query of addr parameters only, and no fragment", ErrInvalidAddress, redactURL(s))
	}
	for name := range query {
		if name != "addr" {
			return Address{}, fmt.Errorf("%w: %q: unknown parameter %q (want addr=host:port, once per further node)", ErrInvalidAddress, redactURL(s), name)
		}
	}
	if a.Seeds, err = hostAndAddrs(s, u, query, "node", "6379"); err != nil {
		return Address{}, err
	}
	a.Username, a.Password = userInformation(u)
	return a, nil
}

// userInformation returns the user name and password of u.
func userInformation(u *url.URL) (username, password string) {
	if u.User == nil {
		return "", ""
	}
	password, hasPassword := u.User.Password()
	if !hasPassword {
		// redis://password@host is the common short form.
		return "", u.User.Username()
	}
	return u.User.Username(), password
}

func splitHostPort(hostPort, defaultPort string) (host, port string, err error) {
	if hostPort == "" {
		return "", "", fmt.Errorf("missing host")
	}
	host, port, err = net.SplitHostPort(hostPort)
	if err != nil {
		// No port: "host" or "[::1]".
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostPort, "["), "]"), defaultPort
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
	if err != nil {
		if i := strings.LastIndex(s, "@"); i >= 0 {
			if j := strings.Index(s, "://"); j >= 0 && j < i {
				return s[:j+3] + "xxxxx" + s[i:]
			}
		}
		if i := strings.Index(s, "?"); i >= 0 && strings.Contains(s[i:], "password") {
			return s[:i] + "?xxxxx" // a query that does not parse may hide a sentinel's password
		}
		return s
	}
	if query, err := url.ParseQuery(u.RawQuery); err == nil && query.Has("sentinel_password") {
		query.Set("sentinel_password", "xxxxx")
		u.RawQuery = query.Encode()
	} else if err != nil && strings.Contains(u.RawQuery, "password") {
		u.RawQuery = "xxxxx"
	}
	return u.Redacted()
}
