package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// commandHelp is the text of one command's --help.
type commandHelp struct {
	// name is the command's name, as typed after "redlock".
	name string
	// synopsis is the usage line, after "Usage: ".
	synopsis string
	// about describes what the command does.
	about string
	// examples are shell lines with their comments.
	examples string
	// exits lists the exit statuses of the command.
	exits string
}

// newFlagSet returns an empty FlagSet for a command. It reports nothing by
// itself: parseFlags writes the help and the errors.
func newFlagSet(help commandHelp) *flag.FlagSet {
	flags := flag.NewFlagSet("redlock "+help.name, flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	flags.Usage = func() {}
	return flags
}

// parseFlags parses a command's arguments. It returns false when the
// command must stop at once with the returned status: the help was asked
// for (0) or the arguments are wrong (64).
func parseFlags(env *environment, flags *flag.FlagSet, help commandHelp, args []string) (int, bool) {
	err := flags.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		writeHelp(env.stdout, flags, help)
		return exitOK, false
	case err != nil:
		return usageError(env, help, "%v", err), false
	}
	return exitOK, true
}

// usageError reports a usage problem of a command and returns exitUsage.
func usageError(env *environment, help commandHelp, format string, arguments ...any) int {
	fmt.Fprintf(env.stderr, "redlock %s: %s\nUsage: %s\nRun 'redlock %s --help' for the flags and examples.\n",
		help.name, fmt.Sprintf(format, arguments...), help.synopsis, help.name)
	return exitUsage
}

// writeHelp writes a command's help: usage, description, flags, examples
// and exit statuses.
func writeHelp(w io.Writer, flags *flag.FlagSet, help commandHelp) {
	var text strings.Builder
	fmt.Fprintf(&text, "Usage: %s\n\n%s\n", help.synopsis, strings.TrimSpace(help.about))
	heading := "\nFlags:\n" // written before the first flag: a command may have none
	flags.VisitAll(func(f *flag.Flag) {
		text.WriteString(heading)
		heading = ""
		kind, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if kind != "" {
			name += " " + strings.ToUpper(kind)
		}
		fmt.Fprintf(&text, "  %s\n      %s", name, usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(&text, " (default %s)", f.DefValue)
		}
		text.WriteString("\n")
	})
	fmt.Fprintf(&text, "\nExamples:\n%s\n", indent(strings.TrimSpace(help.examples)))
	if help.exits != "" {
		fmt.Fprintf(&text, "\nExit statuses:\n%s\n", indent(strings.TrimSpace(help.exits)))
	}
	io.WriteString(w, text.String())
}

// indent puts two spaces before every line of text.
func indent(text string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if line != "" {
			lines[i] = "  " + line
		}
	}
	return strings.Join(lines, "\n")
}
