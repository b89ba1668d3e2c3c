package redlock

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The limits of the README's front page: wc -w words in all, and words in
// one paragraph (a block between blank lines that is not code).
const (
	readmeMaxWords          = 1500
	readmeMaxParagraphWords = 120
)

// The README is a front page read in five minutes: at most readmeMaxWords
// words, and no paragraph over readmeMaxParagraphWords.
func TestREADMEFitsTheFrontPage(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	words, longest, paragraph := readmeSize(string(readme))
	assert.LessOrEqual(t, words, readmeMaxWords, "README.md has %d words", words)
	assert.LessOrEqual(t, longest, readmeMaxParagraphWords, "the longest paragraph of README.md has %d words:\n%s", longest, paragraph)
}

// readmeSize counts as `wc -w` does the words of text, and as
// awk 'BEGIN{RS=""} !/^```/' does the words of its longest paragraph:
// paragraphs are separated by empty lines, and those that start with a
// code fence are skipped.
func readmeSize(text string) (words, longest int, paragraph string) {
	words = len(strings.Fields(text))
	for _, block := range regexp.MustCompile(`\n\n+`).Split(strings.TrimLeft(text, "\n"), -1) {
		if strings.HasPrefix(block, "```") {
			continue
		}
		if n := len(strings.Fields(block)); n > longest {
			longest, paragraph = n, block
		}
	}
	return words, longest, paragraph
}

// The size check itself counts what the awk and wc commands count.
func TestREADMESizeCounts(t *testing.T) {
	text := "# Title\n\none two three\nfour\n\n\n```go\na b c d e f g\n```\n\nfive six\n"
	words, longest, paragraph := readmeSize(text)
	assert.Equal(t, 2+4+9+2, words)
	assert.Equal(t, 4, longest)
	assert.Equal(t, "one two three\nfour", paragraph)
}

// Every Go code block of the README and of docs/ is part of an example
// function's body, which go test compiles and runs, so that the code a
// user copies compiles and does what the page says.
func TestDocsGoBlocksComeFromExamples(t *testing.T) {
	bodies := exampleBodies(t, "..")
	require.NotEmpty(t, bodies)
	pages, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	pages = append([]string{"../README.md"}, pages...)
	for _, page := range pages {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		blocks := goBlocks(string(text))
		if page == "../README.md" {
			require.NotEmpty(t, blocks, "the README shows no Go code")
		}
		for _, block := range blocks {
			found := slices.ContainsFunc(bodies, func(body []string) bool { return containsLines(body, block) })
			assert.True(t, found, "%s: this Go block is in no example's body:\n%s", page, strings.Join(block, "\n"))
		}
	}
}

// goBlocks returns the lines of each ```go block of a Markdown text,
// trimmed and without the empty ones.
func goBlocks(text string) [][]string {
	var blocks [][]string
	var block []string
	inside := false
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case !inside && line == "```go":
			inside, block = true, []string{}
		case inside && line == "```":
			inside = false
			blocks = append(blocks, block)
		case inside && line != "":
			block = append(block, line)
		}
	}
	return blocks
}

// exampleBodies returns the body of every Example function of the test
// files under root, as goBlocks returns a block's lines.
func exampleBodies(t *testing.T, root string) [][]string {
	var bodies [][]string
	files := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() && strings.HasPrefix(entry.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if entry.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		source, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		file, err := parser.ParseFile(files, path, source, parser.ParseComments)
		if err != nil {
			return err
		}
		for _, declaration := range file.Decls {
			function, ok := declaration.(*ast.FuncDecl)
			if !ok || function.Recv != nil || !strings.HasPrefix(function.Name.Name, "Example") || function.Body == nil {
				continue
			}
			start, end := files.Position(function.Body.Lbrace).Offset, files.Position(function.Body.Rbrace).Offset
			bodies = append(bodies, goBlocks("```go\n" + string(source[start+1:end]) + "\n```\n")[0])
		}
		return nil
	})
	require.NoError(t, err)
	return bodies
}

// containsLines reports whether block is a run of consecutive lines of
// body.
func containsLines(body, block []string) bool {
	if len(block) == 0 {
		return true
	}
	for i := 0; i+len(block) <= len(body); i++ {
		if slices.Equal(body[i:i+len(block)], block) {
			return true
		}
	}
	return false
}
