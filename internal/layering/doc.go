// Package layering holds no code: its test checks that the imports of the
// repository point one way, resp ← conn ← mux ← redlock ← cmd, bench,
// contrib, and that the main module depends on nothing beyond its short
// list of allowed modules.
//
// The rules, checked on every non-test .go file:
//
//   - resp imports only the standard library;
//   - conn may import resp; mux may import conn and resp, and so may the
//     packages under mux/internal/... (its Redis Cluster client), which
//     never import mux itself;
//   - redlock and the packages under it (its tools, redlock/doctor,
//     redlock/inspect, redlock/fencedstore, and redlock/internal/...) may
//     import mux, resp and the packages of the redlock subtree, but never
//     conn: mux is their one seam to the network;
//   - redlock's rooms never import redlock: redlock/internal/waiting may
//     import mux, resp and redlock/internal/naming only, and
//     redlock/internal/quarantine those and redlock/internal/protocol;
//   - cmd/... and bench may import any package of the project except
//     another command;
//   - the adapters under contrib/..., each a module of its own, may import
//     redlock and no other package of the project, except in their tests;
//   - resp, conn, mux and redlock never import the test support under the
//     top-level internal/... (redlock/internal/... is part of redlock);
//     redlock may import internal/latency, the latency histogram it shares
//     with the command and the chaos run, which imports no package of the
//     project;
//   - internal/redistest imports no package of the project but
//     internal/miniinfo, so that it stays independent of the code it
//     tests, and neither does internal/workgroup, so that the tests of
//     every package can use it;
//   - nothing imports cmd/...;
//   - outside the bench module, the only modules imported are the standard
//     library, the module itself, github.com/valyala/bytebufferpool and
//     golang.org/x/sys; the test-support packages under internal/ may also
//     import the test dependencies (testify, miniredis).
//
// # Concurrency
//
// There is nothing to call.
//
// # Errors
//
// There is nothing to call; the test reports each offending import with the
// file that holds it.
package layering
