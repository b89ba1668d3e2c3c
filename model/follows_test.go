package model

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// followsLine is a line of README.md that names the code a model
	// follows: "- `lock.pml` follows `redlock/scripts/extend.lua`, …".
	followsLine = regexp.MustCompile("^- `([a-z_]+\\.pml)` follows (.+)$")
	quoted      = regexp.MustCompile("`([^`]+)`")
)

// readFollows returns, by model, the code README.md says it follows.
func readFollows(t *testing.T) map[string][]string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	follows := map[string][]string{}
	for line := range strings.SplitSeq(string(readme), "\n") {
		match := followsLine.FindStringSubmatch(strings.TrimSpace(line))
		if match == nil {
			continue
		}
		for _, item := range quoted.FindAllStringSubmatch(match[2], -1) {
			follows[match[1]] = append(follows[match[1]], item[1])
		}
	}
	return follows
}

// TestModelsNameCodeThatExists checks the list in README.md of the
// scripts and functions each model follows: every file exists, and every
// function ("file.go#Name" or "file.go#Type.Method") is declared in its
// file. A script or function renamed or removed fails it, so the model's
// README is read again when the code it follows changes.
func TestModelsNameCodeThatExists(t *testing.T) {
	follows := readFollows(t)
	models, err := filepath.Glob("*.pml")
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]bool{}
	for _, check := range spinChecks {
		checked[check.model] = true
	}
	for _, model := range models {
		if len(follows[model]) == 0 {
			t.Errorf("README.md names no code that %s follows", model)
		}
		if !checked[model] {
			t.Errorf("%s is not in spinChecks: nothing checks it", model)
		}
	}
	for model, items := range follows {
		if _, err := os.Stat(model); err != nil {
			t.Errorf("README.md lists %s, which does not exist", model)
		}
		for _, item := range items {
			path, function, hasFunction := strings.Cut(item, "#")
			source, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(path)))
			if err != nil {
				t.Errorf("%s follows %s: %v", model, path, err)
				continue
			}
			if hasFunction && !declares(string(source), function) {
				t.Errorf("%s follows %s, which %s does not declare", model, function, path)
			}
		}
	}
}

// declares reports whether Go source declares function, "Name" or
// "Type.Method".
func declares(source, function string) bool {
	pattern := `(?m)^func ` + regexp.QuoteMeta(function) + `[\[(]`
	if typeName, method, isMethod := strings.Cut(function, "."); isMethod {
		pattern = `(?m)^func \(\w+ \*?` + regexp.QuoteMeta(typeName) + `(\[[^\]]*\])?\) ` + regexp.QuoteMeta(method) + `\(`
	}
	return regexp.MustCompile(pattern).MatchString(source)
}
