package main

// The manual page, udpstp(1), generated from the command definitions. cli
// has App.ToMan, but its page leaves out every command's Description and
// lists the options in one alphabetical heap; this one keeps the help's
// categories and the descriptions, and renders the same kind of markdown
// with the same converter cli uses (go-md2man).

import (
	"fmt"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/urfave/cli/v2"
)

func manCommand() *cli.Command {
	return &cli.Command{
		Name:         "man",
		Usage:        "print the udpstp(1) manual page (roff; make man writes it to build/man)",
		UsageText:    "udpstp man | man -l -",
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if err := noArguments(c); err != nil {
				return err
			}
			_, err := c.App.Writer.Write(manPage(c.App))
			return err
		},
	}
}

// manPage renders app's manual page in roff.
func manPage(app *cli.App) []byte {
	app.Setup() // adds --help and --version, as Run does
	return md2man.Render([]byte(manMarkdown(app)))
}

// manDescription is what the page says beyond the commands.
const manDescription = `udpstp measures IP-layer capacity with the method of RFC 9097 over the UDP
Speed Test Protocol of RFC 9946, and interoperates with OB-UDPST 9.0.0, the
Broadband Forum's reference implementation, in both roles: udpstp client
tests against udpst servers and udpst clients test against udpstp server.
The client's options are udpst's, under its letters and a long name; its text
and JSON output are udpst's, line for line and key for key; --extensions adds
udpstp's own figures under a last JSON key, "udpstp".`

const manExitStatus = `The client exits with OB-UDPST's ErrorStatus: 0 when the test completed, 1-49
for a warning, 50 and above for an error (50 a command-line error, 51 a key
file error, 75 a file or socket that cannot be opened). Other commands exit 0
on success, 50 on a command-line error, 75 when a file cannot be read or
written, and 1 on any other failure.`

const manExamples = "```\n" +
	`udpstp server                              # answer tests on port 24601
udpstp client -d -t 10 server.example       # downstream test, 10 s
udpstp client -u -C 4 --output up.json host # upstream, 4 connections, JSON kept
udpstp plot up.json -o up.png               # draw that result
udpstp history --since 7d --format csv       # the agent's results of a week
udpstp completion bash > /etc/bash_completion.d/udpstp
` + "```"

func manMarkdown(app *cli.App) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%% %s 1\n\n# NAME\n\n%s - %s\n\n", app.Name, app.Name, app.Usage)
	b.WriteString("# SYNOPSIS\n\n")
	for _, c := range app.VisibleCommands() {
		u := c.UsageText
		if u == "" {
			u = app.Name + " " + c.Name + " [options]"
		}
		fmt.Fprintf(&b, "%s\n\n", mdEscape(u))
	}
	fmt.Fprintf(&b, "%s --version\n\n", app.Name)
	fmt.Fprintf(&b, "# DESCRIPTION\n\n%s\n\n", manDescription)
	if len(app.VisibleFlags()) > 0 {
		b.WriteString("# GLOBAL OPTIONS\n\n")
		writeFlags(&b, app.VisibleFlags())
	}
	b.WriteString("# COMMANDS\n\n")
	for _, c := range app.VisibleCommands() {
		fmt.Fprintf(&b, "## %s\n\n%s.\n\n", c.Name, mdEscape(c.Usage))
		if c.Description != "" {
			fmt.Fprintf(&b, "%s\n\n", mdEscape(strings.ReplaceAll(c.Description, "\n", " ")))
		}
		// cli's categories hold only the flags that have one; the
		// others come first, as in the help.
		var plain []cli.Flag
		for _, f := range c.VisibleFlags() {
			if cf, ok := f.(cli.CategorizableFlag); !ok || cf.GetCategory() == "" {
				plain = append(plain, f)
			}
		}
		writeFlags(&b, plain)
		for _, cat := range c.VisibleFlagCategories() {
			if cat.Name() != "" {
				fmt.Fprintf(&b, "**%s**\n\n", mdEscape(cat.Name()))
			}
			var flags []cli.Flag
			for _, f := range cat.Flags() {
				flags = append(flags, f)
			}
			writeFlags(&b, flags)
		}
	}
	fmt.Fprintf(&b, "# EXIT STATUS\n\n%s\n\n", manExitStatus)
	fmt.Fprintf(&b, "# EXAMPLES\n\n%s\n\n", manExamples)
	b.WriteString("# SEE ALSO\n\nudpst(1) of OB-UDPST; RFC 9097; RFC 9946; `" + app.Name + " rates` for the Sending Rate Table.\n")
	return b.String()
}

// writeFlags writes flags as a definition list: the names with the
// value's placeholder, then the usage and the default.
func writeFlags(b *strings.Builder, flags []cli.Flag) {
	for _, f := range flags {
		d, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		placeholder, rest := unquoteUsage(d.GetUsage())
		var names []string
		for _, n := range f.Names() {
			dash := "--"
			if len(n) == 1 {
				dash = "-"
			}
			names = append(names, "**"+dash+mdEscape(n)+"**")
		}
		term := strings.Join(names, ", ")
		if d.TakesValue() {
			if placeholder == "" {
				placeholder = "value"
			}
			term += " *" + mdEscape(placeholder) + "*"
		}
		text := mdEscape(rest)
		if def := d.GetDefaultText(); def != "" && d.TakesValue() {
			text += " (default: " + mdEscape(def) + ")"
		}
		fmt.Fprintf(b, "%s\n: %s\n\n", term, text)
	}
}

// unquoteUsage splits a usage text as cli's help does: the first
// `word` in backquotes is the value's placeholder, shown without them.
func unquoteUsage(usage string) (placeholder, text string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	j += i + 1
	return usage[i+1 : j], usage[:i] + usage[i+1:j] + usage[j+1:]
}

// mdEscape keeps markdown from reading our text as markup.
func mdEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", `\`+"`", "[", `\[`, "]", `\]`, "<", `\<`, "#", `\#`).Replace(s)
}
