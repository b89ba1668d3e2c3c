package redistest

import (
	"strconv"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/lockmux/lockmux/internal/miniinfo"
)

// startMiniredis runs an in-process miniredis server with the parts of opts
// it can honour: the password and TLS. It answers the INFO sections the
// quarantine reads (package miniinfo). ACL rules cannot be enforced, so a
// test that asks for them is skipped; persistence, the DEBUG switch,
// ExtraArgs and Env are ignored.
func startMiniredis(t testing.TB, opts Options) *Server {
	t.Helper()
	if len(opts.ACLUsers) > 0 {
		t.Skipf("redistest: ACL rules need a redis-server process; miniredis does not enforce them")
	}
	s := &Server{t: t, opts: opts, mini: miniredis.NewMiniRedis()}
	if opts.Password != "" {
		s.mini.RequireAuth(opts.Password)
	}
	var err error
	if opts.TLS {
		if s.certs, err = newCertificates(t.TempDir()); err != nil {
			t.Fatalf("%v", err)
		}
		err = s.mini.StartTLS(s.certs.serverConfig())
	} else {
		err = s.mini.Start()
	}
	if err != nil {
		t.Fatalf("redistest: start miniredis: %v", err)
	}
	miniinfo.Install(s.mini)
	t.Cleanup(s.mini.Close)
	if s.port, err = strconv.Atoi(s.mini.Port()); err != nil {
		t.Fatalf("redistest: miniredis port %q: %v", s.mini.Port(), err)
	}
	return s
}
