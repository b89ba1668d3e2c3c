package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

var versionHelp = commandHelp{
	name:     "version",
	synopsis: "redlock version",
	about: `Print the version of lockmux this redlock was built from, the Go version that
built it and its platform, and, when the build recorded them, the revision of
the source and whether it had uncommitted changes. A build from a checkout
without a version tag shows the version "(devel)".`,
	examples: `redlock version

# Built from a tagged release:
go install github.com/lockmux/lockmux/cmd/redlock@v0.1.0 && redlock version`,
	exits: `0    the version was printed
64   bad usage`,
}

func versionCommand(ctx context.Context, env *environment, args []string) int {
	flags := newFlagSet(versionHelp)
	if status, ok := parseFlags(env, flags, versionHelp, args); !ok {
		return status
	}
	if flags.NArg() != 0 {
		return usageError(env, versionHelp, "unexpected argument %q", flags.Arg(0))
	}
	fmt.Fprint(env.stdout, newBuildVersion(debug.ReadBuildInfo()).text())
	return exitOK
}

// buildVersion is what the build information says of a binary.
type buildVersion struct {
	// module is the main module's path, and version its version:
	// "(devel)" for a build from a checkout, "unknown" without build
	// information.
	module, version string
	// goVersion is the version of Go that built the binary.
	goVersion string
	// revision is the VCS revision of the source, and time its commit
	// time, or "" when the build did not record them.
	revision, time string
	// modified is set when the source had uncommitted changes.
	modified bool
}

// newBuildVersion reads the build information that
// debug.ReadBuildInfo returned.
func newBuildVersion(info *debug.BuildInfo, ok bool) buildVersion {
	if !ok || info == nil {
		return buildVersion{module: "github.com/lockmux/lockmux", version: "unknown", goVersion: runtime.Version()}
	}
	v := buildVersion{module: info.Main.Path, version: info.Main.Version, goVersion: info.GoVersion}
	if v.version == "" {
		v.version = "(devel)"
	}
	for _, setting := range info.Settings {
		switch setting.Key {
		case "vcs.revision":
			v.revision = setting.Value
		case "vcs.time":
			v.time = setting.Value
		case "vcs.modified":
			v.modified = setting.Value == "true"
		}
	}
	return v
}

// text returns the version for people, one "name: value" line each.
func (v buildVersion) text() string {
	var text strings.Builder
	fmt.Fprintf(&text, "redlock %s\nmodule: %s\ngo: %s %s/%s\n", v.version, v.module, v.goVersion, runtime.GOOS, runtime.GOARCH)
	if v.revision != "" {
		fmt.Fprintf(&text, "revision: %s", v.revision)
		if v.modified {
			text.WriteString(" (modified)")
		}
		text.WriteString("\n")
	}
	if v.time != "" {
		fmt.Fprintf(&text, "committed: %s\n", v.time)
	}
	return text.String()
}
