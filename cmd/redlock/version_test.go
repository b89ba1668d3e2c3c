package main

import (
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// version reads the module version, the Go version and the VCS revision
// from the build information, whatever the build recorded.
func TestVersionReadsTheBuildInformation(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{
			name: "a tagged release with its revision",
			info: &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/lockmux/lockmux", Version: "v0.1.0"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-11-26T12:00:00Z"},
					{Key: "vcs.modified", Value: "false"}}},
			want: "redlock v0.1.0\nmodule: github.com/lockmux/lockmux\ngo: go1.26.1 " + platform +
				"\nrevision: 0123abcd\ncommitted: 2026-11-26T12:00:00Z\n",
		},
		{
			name: "a checkout with uncommitted changes",
			info: &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/lockmux/lockmux", Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}},
			want: "redlock (devel)\nmodule: github.com/lockmux/lockmux\ngo: go1.26.1 " + platform + "\nrevision: 0123abcd (modified)\n",
		},
		{
			name: "no VCS information",
			info: &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/lockmux/lockmux"}},
			want: "redlock (devel)\nmodule: github.com/lockmux/lockmux\ngo: go1.26.1 " + platform + "\n",
		},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			assert.Equal(t, test.want, newBuildVersion(test.info, true).text())
		})
	}
	unknown := newBuildVersion(nil, false).text()
	assert.True(t, strings.HasPrefix(unknown, "redlock unknown\n"), unknown)
	assert.Contains(t, unknown, "go: "+runtime.Version()+" ")
}

// The built binary names its module and the Go that built it: a build from
// a checkout without a tag is "(devel)".
func TestVersionOfTheBuiltBinary(t *testing.T) {
	output, err := exec.Command(binary, "version").Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(output)), "\n")
	require.GreaterOrEqual(t, len(lines), 3, string(output))
	assert.Regexp(t, `^redlock (\(devel\)|v\d+\.\d+\.\d+\S*)$`, lines[0])
	assert.Equal(t, "module: github.com/lockmux/lockmux", lines[1])
	assert.Equal(t, "go: "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH, lines[2])
	for _, line := range lines[3:] {
		assert.Regexp(t, `^(revision: [0-9a-f]{40}( \(modified\))?|committed: \S+)$`, line)
	}

	extra := invoke(t, nil, "version", "now")
	assert.Equal(t, exitUsage, extra.status)
	assert.Contains(t, extra.stderr, `unexpected argument "now"`)
}
