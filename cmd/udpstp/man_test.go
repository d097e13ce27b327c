package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// manSections splits the page's markdown into its command sections.
func manSections(t *testing.T) (whole string, cmds map[string]string) {
	t.Helper()
	md := manMarkdown(setupApp())
	cmds = map[string]string{}
	for _, part := range strings.Split(md, "\n## ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		cmds[name] = body
	}
	return md, cmds
}

func setupApp() *cli.App {
	app := newApp()
	app.Setup()
	return app
}

// unroff undoes the escapes that matter for finding an option's name.
func unroff(s string) string {
	return strings.NewReplacer(`\-`, "-", `\\`, `\`, `\fB`, "", `\fR`, "", `\fI`, "", `\fP`, "").Replace(s)
}

// The page documents every option of every command where it applies: the
// section of each command has each of its visible flags, by every name,
// and none of the other role's hidden ones; the rendered page has them all.
func TestManPageMentionsEveryOption(t *testing.T) {
	md, sections := manSections(t)
	page := unroff(string(manPage(newApp())))
	app := setupApp()
	if !strings.Contains(page, ".TH \"udpstp\" \"1\"") && !strings.Contains(page, ".TH udpstp 1") {
		t.Errorf("not a section 1 page: %.200q", page)
	}
	for _, f := range app.VisibleFlags() {
		for _, n := range f.Names() {
			if !strings.Contains(page, dashed(n)) {
				t.Errorf("global option %s missing", dashed(n))
			}
		}
	}
	for _, c := range app.VisibleCommands() {
		body, ok := sections[c.Name]
		if !ok {
			t.Errorf("no section for command %s", c.Name)
			continue
		}
		if c.Description != "" && !strings.Contains(body, mdEscape(strings.Fields(c.Description)[0])) {
			t.Errorf("%s: description missing", c.Name)
		}
		for _, f := range c.Flags {
			hidden := false
			if v, ok := f.(cli.VisibleFlag); ok {
				hidden = !v.IsVisible()
			}
			for _, n := range f.Names() {
				term := "**" + mdEscape(dashed(n)) + "**"
				switch {
				case hidden && strings.Contains(body, term):
					t.Errorf("%s: hidden option %s documented", c.Name, dashed(n))
				case !hidden && !strings.Contains(body, term):
					t.Errorf("%s: option %s missing", c.Name, dashed(n))
				case !hidden && !strings.Contains(page, dashed(n)):
					t.Errorf("%s: option %s missing from the rendered page", c.Name, dashed(n))
				}
			}
		}
	}
	// Every option of the table is in the page, under its letter too.
	for i := range options {
		o := &options[i]
		if !strings.Contains(page, "--"+o.name) || (o.letter != "" && !strings.Contains(page, "-"+o.letter)) {
			t.Errorf("%s missing from the page", o)
		}
	}
	for _, s := range []string{"EXIT STATUS", "EXAMPLES", "SEE ALSO"} {
		if !strings.Contains(md, "# "+s+"\n") {
			t.Errorf("no %s section", s)
		}
	}
	// groff, where present, reads it without a warning.
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Logf("groff not installed: the page's roff is not checked (apt-get install groff-base)")
		return
	}
	cmd := exec.Command(groff, "-man", "-z", "-ww")
	cmd.Stdin = bytes.NewReader(manPage(newApp()))
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("groff -man -ww: %v\n%s", err, out)
	}
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func TestManCommand(t *testing.T) {
	r := run(t, "man")
	if r.code != 0 || !strings.Contains(r.out, ".SH NAME") || !strings.Contains(r.out, ".SH COMMANDS") {
		t.Errorf("udpstp man: exit %d %q, %.200q", r.code, r.msg, r.out)
	}
	mustFail(t, exitConfig, []string{"man", "x"}, `"x"`)
}

func TestUnquoteUsage(t *testing.T) {
	for in, want := range map[string][2]string{
		"key `file` of lines": {"file", "key file of lines"},
		"no placeholder":      {"", "no placeholder"},
		"one ` only":          {"", "one ` only"},
	} {
		if p, s := unquoteUsage(in); p != want[0] || s != want[1] {
			t.Errorf("unquoteUsage(%q) = %q, %q", in, p, s)
		}
	}
}
