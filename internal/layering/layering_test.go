package layering

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layers maps a directory of the repository to the directories its
// packages may import, besides their own subtree. A package belongs to the
// longest directory listed here that contains it.
var layers = map[string][]string{
	"resp":               {},
	"conn":               {"resp"},
	"mux":                {"conn", "resp"},
	"mux/internal":       {"conn", "resp"},                    // mux's rooms (its Redis Cluster client): never mux itself
	"redlock":            {"mux", "resp", "internal/latency"}, // mux is the one seam to the network: never conn
	"internal":           {"internal", "redlock", "mux", "conn", "resp"},
	"internal/redistest": {"internal/miniinfo"},
	"internal/miniinfo":  {}, // redistest and the command's demo use it
	"internal/workgroup": {}, // the tests of every package use it
	"internal/latency":   {}, // the one latency histogram: redlock's Stats, the command, the chaos run, the many-holds run
	"cmd":                {"internal", "redlock", "mux", "conn", "resp"},
	"bench":              {"internal", "redlock", "mux", "conn", "resp"},
	"contrib":            {"redlock"}, // adapters use redlock's public API only

	// redlock's rooms: each imports only what is listed, never redlock.
	"redlock/internal/waiting":    {"mux", "resp", "redlock/internal/naming"},
	"redlock/internal/quarantine": {"mux", "resp", "redlock/internal/naming", "redlock/internal/protocol"},
	"redlock/internal/liveness":   {"mux", "resp", "redlock/internal/naming", "redlock/internal/protocol", "redlock/internal/spare"},
	"redlock/internal/round":      {"mux", "resp", "redlock/internal/naming", "redlock/internal/protocol", "redlock/internal/quarantine", "redlock/internal/spare"},
	"redlock/internal/turn":       {}, // a lock's exclusion within this process
	"redlock/internal/spare":      {}, // the free lists of what the Client lends
}

// allowedModules are the modules non-test files of the main module may
// import, besides the standard library and the module itself.
var allowedModules = []string{
	"github.com/valyala/bytebufferpool",
	"golang.org/x/sys",
}

// testModules may also be imported by the test-support packages under
// internal/, which only tests import.
var testModules = []string{
	"github.com/stretchr/testify",
	"github.com/alicebob/miniredis/v2",
}

// commandModules may also be imported by the command-line tool: its demo
// runs in-process servers on a machine without redis-server. The library
// packages never import them.
var commandModules = []string{
	"github.com/alicebob/miniredis/v2",
}

// layerOf returns the entry of layers that holds dir, or "" when none does.
func layerOf(dir string) string {
	best := ""
	for layer := range layers {
		if within(dir, layer) && len(layer) > len(best) {
			best = layer
		}
	}
	return best
}

// within reports whether dir is root or below it.
func within(dir, root string) bool {
	return dir == root || strings.HasPrefix(dir, root+"/")
}

// isStandard reports whether importPath belongs to the standard library:
// its first element has no dot.
func isStandard(importPath string) bool {
	first, _, _ := strings.Cut(importPath, "/")
	return !strings.Contains(first, ".")
}

// fromModules reports whether importPath is in one of the modules.
func fromModules(importPath string, modules []string) bool {
	for _, module := range modules {
		if within(importPath, module) {
			return true
		}
	}
	return false
}

// file describes one Go file for the checks.
type file struct {
	dir        string // its directory, relative to the repository root, slash-separated
	mainModule bool   // false inside a nested module such as bench
	test       bool   // a _test.go file
}

// problem returns why f may not import importPath, or "" when it may.
// modulePath is the main module's path.
func problem(modulePath string, f file, importPath string) string {
	if isStandard(importPath) {
		return ""
	}
	if !within(importPath, modulePath) {
		switch {
		case !f.mainModule:
			return "" // a nested module manages its own dependencies
		case fromModules(importPath, allowedModules):
			return ""
		case (f.test || within(f.dir, "internal")) && fromModules(importPath, testModules):
			return ""
		case within(f.dir, "cmd") && fromModules(importPath, commandModules):
			return ""
		default:
			return "imports a module outside the allowed dependencies"
		}
	}

	target := strings.TrimPrefix(strings.TrimPrefix(importPath, modulePath), "/")
	if within(target, "cmd") {
		// A command may split itself into packages of its own subtree.
		if command := commandOf(f.dir); command != "" && within(target, command) {
			return ""
		}
		return "imports a command"
	}
	if f.test && within(target, "internal") {
		return "" // test support: servers, fault proxy, floor client
	}
	layer := layerOf(f.dir)
	if layer == "" {
		return "is in a directory the layering rules do not cover; add it to layers"
	}
	if within(target, layer) {
		return ""
	}
	for _, allowed := range layers[layer] {
		if within(target, allowed) && layerOf(target) != "" {
			return ""
		}
	}
	return fmt.Sprintf("imports against the layering (%s may import %v)", layer, layers[layer])
}

// commandOf returns "cmd/NAME" for a directory at or below it, or "".
func commandOf(dir string) string {
	parts := strings.SplitN(dir, "/", 3)
	if len(parts) < 2 || parts[0] != "cmd" {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

func TestProblem(t *testing.T) {
	t.Parallel()
	const module = "example.com/m"
	main := func(dir string) file { return file{dir: dir, mainModule: true} }
	test := func(dir string) file { return file{dir: dir, mainModule: true, test: true} }
	tests := []struct {
		name       string
		file       file
		importPath string
		wantOK     bool
	}{
		{name: "resp uses the standard library", file: main("resp"), importPath: "net/http", wantOK: true},
		{name: "resp imports conn", file: main("resp"), importPath: module + "/conn"},
		{name: "resp imports bytebufferpool", file: main("resp"), importPath: "github.com/valyala/bytebufferpool", wantOK: true},
		{name: "resp imports its own subpackage", file: main("resp"), importPath: module + "/resp/internal/scan", wantOK: true},
		{name: "conn imports resp", file: main("conn"), importPath: module + "/resp", wantOK: true},
		{name: "conn imports mux", file: main("conn"), importPath: module + "/mux"},
		{name: "mux imports conn", file: main("mux"), importPath: module + "/conn", wantOK: true},
		{name: "mux imports redlock", file: main("mux"), importPath: module + "/redlock"},
		{name: "mux imports its cluster client", file: main("mux"), importPath: module + "/mux/internal/cluster", wantOK: true},
		{name: "the cluster client imports conn", file: main("mux/internal/cluster"), importPath: module + "/conn", wantOK: true},
		{name: "the cluster client imports mux", file: main("mux/internal/cluster"), importPath: module + "/mux"},
		{name: "the cluster client imports redlock", file: main("mux/internal/cluster"), importPath: module + "/redlock"},
		{name: "redlock imports mux", file: main("redlock"), importPath: module + "/mux", wantOK: true},
		{name: "the waiting room imports mux", file: main("redlock/internal/waiting"), importPath: module + "/mux", wantOK: true},
		{name: "the waiting room imports the names", file: main("redlock/internal/waiting"), importPath: module + "/redlock/internal/naming", wantOK: true},
		{name: "the waiting room imports redlock", file: main("redlock/internal/waiting"), importPath: module + "/redlock"},
		{name: "the waiting room imports another room", file: main("redlock/internal/waiting"), importPath: module + "/redlock/internal/transport"},
		{name: "the waiting room imports conn", file: main("redlock/internal/waiting"), importPath: module + "/conn"},
		{name: "redlock imports the waiting room", file: main("redlock"), importPath: module + "/redlock/internal/waiting", wantOK: true},
		{name: "the quarantine imports mux", file: main("redlock/internal/quarantine"), importPath: module + "/mux", wantOK: true},
		{name: "the quarantine imports the protocol", file: main("redlock/internal/quarantine"), importPath: module + "/redlock/internal/protocol", wantOK: true},
		{name: "the quarantine imports redlock", file: main("redlock/internal/quarantine"), importPath: module + "/redlock"},
		{name: "the quarantine imports the waiting room", file: main("redlock/internal/quarantine"), importPath: module + "/redlock/internal/waiting"},
		{name: "the quarantine imports conn", file: main("redlock/internal/quarantine"), importPath: module + "/conn"},
		{name: "the liveness room imports mux", file: main("redlock/internal/liveness"), importPath: module + "/mux", wantOK: true},
		{name: "the liveness room imports the protocol", file: main("redlock/internal/liveness"), importPath: module + "/redlock/internal/protocol", wantOK: true},
		{name: "the liveness room imports redlock", file: main("redlock/internal/liveness"), importPath: module + "/redlock"},
		{name: "the liveness room imports the waiting room", file: main("redlock/internal/liveness"), importPath: module + "/redlock/internal/waiting"},
		{name: "the liveness room imports conn", file: main("redlock/internal/liveness"), importPath: module + "/conn"},
		{name: "redlock imports the liveness room", file: main("redlock"), importPath: module + "/redlock/internal/liveness", wantOK: true},
		{name: "the round imports mux", file: main("redlock/internal/round"), importPath: module + "/mux", wantOK: true},
		{name: "the round imports the protocol", file: main("redlock/internal/round"), importPath: module + "/redlock/internal/protocol", wantOK: true},
		{name: "the round imports the quarantine", file: main("redlock/internal/round"), importPath: module + "/redlock/internal/quarantine", wantOK: true},
		{name: "the round imports redlock", file: main("redlock/internal/round"), importPath: module + "/redlock"},
		{name: "the round imports the waiting room", file: main("redlock/internal/round"), importPath: module + "/redlock/internal/waiting"},
		{name: "the round imports conn", file: main("redlock/internal/round"), importPath: module + "/conn"},
		{name: "redlock imports the round", file: main("redlock"), importPath: module + "/redlock/internal/round", wantOK: true},
		{name: "the turn imports mux", file: main("redlock/internal/turn"), importPath: module + "/mux"},
		{name: "the turn imports redlock", file: main("redlock/internal/turn"), importPath: module + "/redlock"},
		{name: "redlock imports the turn", file: main("redlock"), importPath: module + "/redlock/internal/turn", wantOK: true},
		{name: "the round imports the free lists", file: main("redlock/internal/round"), importPath: module + "/redlock/internal/spare", wantOK: true},
		{name: "the free lists import mux", file: main("redlock/internal/spare"), importPath: module + "/mux"},
		{name: "the doctor imports the quarantine", file: main("redlock/doctor"), importPath: module + "/redlock/internal/quarantine", wantOK: true},
		{name: "redlock imports conn, around mux", file: main("redlock"), importPath: module + "/conn"},
		{name: "a subpackage of redlock imports conn", file: main("redlock/doctor"), importPath: module + "/conn"},
		{name: "a tool under redlock imports redlock", file: main("redlock/doctor"), importPath: module + "/redlock", wantOK: true},
		{name: "a tool under redlock imports mux", file: main("redlock/inspect"), importPath: module + "/mux", wantOK: true},
		{name: "a tool under redlock imports redlock's internal packages", file: main("redlock/fencedstore"), importPath: module + "/redlock/internal/transport", wantOK: true},
		{name: "redlock imports its internal packages", file: main("redlock"), importPath: module + "/redlock/internal/naming", wantOK: true},
		{name: "an internal package of redlock imports conn", file: main("redlock/internal/transport"), importPath: module + "/conn"},
		{name: "redlock imports internal", file: main("redlock"), importPath: module + "/internal/redistest"},
		{name: "redlock imports the latency histogram", file: main("redlock"), importPath: module + "/internal/latency", wantOK: true},
		{name: "conn imports the latency histogram", file: main("conn"), importPath: module + "/internal/latency"},
		{name: "the latency histogram imports redlock", file: main("internal/latency"), importPath: module + "/redlock"},
		{name: "redlock imports a command", file: main("redlock"), importPath: module + "/cmd/redlock"},
		{name: "cmd imports redlock", file: main("cmd/redlock"), importPath: module + "/redlock", wantOK: true},
		{name: "cmd imports internal", file: main("cmd/redlock"), importPath: module + "/internal/redistest", wantOK: true},
		{name: "cmd imports its own subpackage", file: main("cmd/redlock/run"), importPath: module + "/cmd/redlock/demo", wantOK: true},
		{name: "cmd imports another command", file: main("cmd/redlock"), importPath: module + "/cmd/other"},
		{name: "cmd imports an unknown module", file: main("cmd/redlock"), importPath: "github.com/spf13/cobra"},
		{name: "internal imports miniredis", file: main("internal/redistest"), importPath: "github.com/alicebob/miniredis/v2", wantOK: true},
		{name: "internal imports testify", file: main("internal/safety"), importPath: "github.com/stretchr/testify/require", wantOK: true},
		{name: "redistest imports resp", file: main("internal/redistest"), importPath: module + "/resp"},
		{name: "workgroup imports redistest", file: main("internal/workgroup"), importPath: module + "/internal/redistest"},
		{name: "a resp test uses workgroup", file: test("resp"), importPath: module + "/internal/workgroup", wantOK: true},
		{name: "internal imports redlock", file: main("internal/safety"), importPath: module + "/redlock", wantOK: true},
		{name: "redlock imports miniredis", file: main("redlock"), importPath: "github.com/alicebob/miniredis/v2"},
		{name: "the command imports miniredis for its demo", file: main("cmd/redlock"), importPath: "github.com/alicebob/miniredis/v2", wantOK: true},
		{name: "the command imports testify", file: main("cmd/redlock"), importPath: "github.com/stretchr/testify/require"},
		{name: "bench imports redlock", file: file{dir: "bench"}, importPath: module + "/redlock", wantOK: true},
		{name: "bench imports a peer library", file: file{dir: "bench"}, importPath: "github.com/go-redsync/redsync/v4", wantOK: true},
		{name: "bench imports a command", file: file{dir: "bench"}, importPath: module + "/cmd/redlock"},
		{name: "an adapter imports redlock", file: file{dir: "contrib/prometheus"}, importPath: module + "/redlock", wantOK: true},
		{name: "an adapter imports mux", file: file{dir: "contrib/prometheus"}, importPath: module + "/mux"},
		{name: "an adapter's test uses the test servers", file: file{dir: "contrib/prometheus", test: true}, importPath: module + "/internal/redistest", wantOK: true},
		{name: "an adapter imports its client library", file: file{dir: "contrib/prometheus"}, importPath: "github.com/prometheus/client_golang/prometheus", wantOK: true},
		{name: "uncovered directory", file: main("tools"), importPath: module + "/resp"},
		{name: "a conn test uses the test servers", file: test("conn"), importPath: module + "/internal/redistest", wantOK: true},
		{name: "a conn test uses testify", file: test("conn"), importPath: "github.com/stretchr/testify/require", wantOK: true},
		{name: "a conn test imports redlock", file: test("conn"), importPath: module + "/redlock"},
		{name: "a resp test imports conn", file: test("resp"), importPath: module + "/conn"},
		{name: "a redlock test imports mux", file: test("redlock"), importPath: module + "/mux", wantOK: true},
		{name: "a redlock test imports conn", file: test("redlock"), importPath: module + "/conn"},
		{name: "lookalike prefix", file: main("resp"), importPath: module + "/respx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problem(module, tt.file, tt.importPath)
			if tt.wantOK {
				assert.Empty(t, got)
			} else {
				assert.NotEmpty(t, got)
			}
		})
	}
}

func TestRepositoryImports(t *testing.T) {
	t.Parallel()
	root := repositoryRoot(t)
	modulePath := readModulePath(t, filepath.Join(root, "go.mod"))

	checked := 0
	var problems []string
	fileSet := token.NewFileSet()
	err := filepath.WalkDir(root, func(name string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := entry.Name()
		if entry.IsDir() {
			if name != root && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata" || base == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(base, ".go") {
			return nil
		}
		relative, err := filepath.Rel(root, filepath.Dir(name))
		if err != nil {
			return err
		}
		f := file{dir: filepath.ToSlash(relative), mainModule: inMainModule(root, filepath.Dir(name)), test: strings.HasSuffix(base, "_test.go")}
		parsed, err := parser.ParseFile(fileSet, name, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, spec := range parsed.Imports {
			importPath, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if reason := problem(modulePath, f, importPath); reason != "" {
				problems = append(problems, fmt.Sprintf("%s: %q %s", path.Join(f.dir, base), importPath, reason))
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Positive(t, checked, "no Go files found under %s", root)
	sort.Strings(problems)
	assert.Empty(t, problems, "imports that break the rules of package layering:\n%s", strings.Join(problems, "\n"))
}

// repositoryRoot walks up from the working directory to the directory that
// holds the main module's go.mod.
func repositoryRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !isNestedModule(dir) {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the working directory")
		dir = parent
	}
}

// isNestedModule reports whether dir holds a go.mod and a parent directory
// holds another: such a module (bench) is not the repository root.
func isNestedModule(dir string) bool {
	for parent := filepath.Dir(dir); parent != dir; dir, parent = parent, filepath.Dir(parent) {
		if _, err := os.Stat(filepath.Join(parent, "go.mod")); err == nil {
			return true
		}
	}
	return false
}

// inMainModule reports whether dir belongs to the module at root rather
// than to a nested module between root and dir.
func inMainModule(root, dir string) bool {
	for ; dir != root && len(dir) > len(root); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return false
		}
	}
	return true
}

// readModulePath returns the module path declared in a go.mod file.
func readModulePath(t *testing.T, goMod string) string {
	t.Helper()
	goModFile, err := os.Open(goMod)
	require.NoError(t, err)
	defer goModFile.Close()
	scanner := bufio.NewScanner(goModFile)
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(scanner.Text()), "module "); ok {
			modulePath, err := strconv.Unquote(strings.TrimSpace(rest))
			if err != nil {
				modulePath = strings.TrimSpace(rest)
			}
			return modulePath
		}
	}
	require.NoError(t, scanner.Err())
	require.FailNow(t, "no module line", "in %s", goMod)
	return ""
}
