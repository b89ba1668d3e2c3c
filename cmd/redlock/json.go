package main

import (
	"encoding/json"
	"io"
)

// writeJSON writes value to w as one JSON object on one line, as --json
// prints a command's result; docs/json.md is the schema of each. Strings
// are written as they are, "<", ">" and "&" included (ACL rules have "&").
// A failed write of stdout is not reported, as the text output's is not.
func writeJSON(w io.Writer, value any) {
	encoder := json.NewEncoder(w)
	encoder.SetEscapeHTML(false)
	encoder.Encode(value)
}
