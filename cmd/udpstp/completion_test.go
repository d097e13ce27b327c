package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/report"
	"github.com/udpstp/udpstp/server"
)

// completionScript writes `udpstp completion shell` to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	r := run(t, "completion", shell)
	if r.code != 0 || !strings.Contains(r.out, "udpstp") {
		t.Fatalf("completion %s: exit %d %q", shell, r.code, r.msg)
	}
	p := filepath.Join(t.TempDir(), "udpstp."+shell)
	if err := os.WriteFile(p, []byte(r.out), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// shell finds a shell or skips, saying how to get it (CI installs them).
func shell(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed, its completion script is not checked (apt-get install %s)", name, name)
	}
	return p
}

// Each script is valid in its shell: bash -n, zsh -n, fish -n. The help
// command runs first: cli's global help command then lists itself among
// its subcommands, which once sent the fish generator into endless
// recursion.
func TestCompletionSyntax(t *testing.T) {
	run(t, "help", "client")
	run(t, "version", "--help")
	for _, sh := range completionShells {
		t.Run(sh, func(t *testing.T) {
			script := completionScript(t, sh)
			if out, err := exec.Command(shell(t, sh), "-n", script).CombinedOutput(); err != nil || len(out) > 0 {
				t.Errorf("%s -n: %v\n%s", sh, err, out)
			}
		})
	}
	mustFail(t, exitConfig, []string{"completion"}, "bash, zsh, fish")
	mustFail(t, exitConfig, []string{"completion", "tcsh"}, `"tcsh"`)
}

// The scripts complete for real, each in its own shell, from the option
// table: the commands, a command's long and short options (never the other
// role's), an enumerated option's values after it (-f, --format, -A,
// --log-level), file names where a value or an argument is a file, and a
// space after a completed word (bash: no nospace; zsh: compadd without an
// empty suffix).
func TestCompletionWorks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs each shell many times (skipped with -short)")
	}
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "result.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	// want compares a completion with the words expected, in any order.
	want := func(t *testing.T, what string, got []string, w ...string) {
		t.Helper()
		g, e := append([]string(nil), got...), append([]string(nil), w...)
		sort.Strings(g)
		sort.Strings(e)
		if strings.Join(g, " ") != strings.Join(e, " ") {
			t.Errorf("%s<TAB>: %q, want %q", what, got, w)
		}
	}
	// has checks that a completion offers every word of w and none of not.
	has := func(t *testing.T, what string, got []string, w []string, not ...string) {
		t.Helper()
		set := map[string]bool{}
		for _, g := range got {
			set[g] = true
		}
		for _, x := range w {
			if !set[x] {
				t.Errorf("%s<TAB> lacks %s: %q", what, x, got)
			}
		}
		for _, x := range not {
			if set[x] {
				t.Errorf("%s<TAB> offers %s: %q", what, x, got)
			}
		}
	}
	clientOpts := []string{"--upstream", "-u", "--format", "-f", "--verbose", "--output", "--json-stream", "--help"}

	t.Run("bash", func(t *testing.T) {
		script := completionScript(t, "bash")
		sh := shell(t, "bash")
		// complete runs the completion function as bash runs it for the
		// words (the last one is being completed) and returns COMPREPLY.
		complete := func(words ...string) []string {
			t.Helper()
			prog := "source " + script + "; COMP_WORDS=(" + quoteWords(words) + "); COMP_CWORD=" +
				strconv.Itoa(len(words)-1) + `; _udpstp; printf '%s\n' "${COMPREPLY[@]}"`
			cmd := exec.Command(sh, "--norc", "--noprofile", "-c", prog)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			return strings.Fields(string(out))
		}
		want(t, "udpstp pl", complete("udpstp", "pl"), "plot")
		want(t, "udpstp --ver", complete("udpstp", "--ver"), "--version")
		want(t, "client --verb", complete("udpstp", "client", "--verb"), "--verbose")
		has(t, "client --", complete("udpstp", "client", "-"), clientOpts, "--stats-file", "-G", "--log-level")
		want(t, "client --stat", complete("udpstp", "client", "--stat"))
		want(t, "server --stat", complete("udpstp", "server", "--stat"), "--stats-file")
		want(t, "client -f ", complete("udpstp", "client", "-f", ""), "text", "json", "jsonb", "jsonf")
		want(t, "client -u --format js", complete("udpstp", "client", "-u", "--format", "js"), "json", "jsonb", "jsonf")
		want(t, "client -A ", complete("udpstp", "client", "-A", ""), "B", "C")
		want(t, "client --progress a", complete("udpstp", "client", "--progress", "a"), "auto", "always")
		want(t, "server --log-level ", complete("udpstp", "server", "--log-level", ""), "debug", "info", "warn", "error")
		want(t, "client -t ", complete("udpstp", "client", "-t", "")) // a number: nothing to offer, no file names
		want(t, "client --output res", complete("udpstp", "client", "--output", "res"), "result.json")
		want(t, "plot res", complete("udpstp", "plot", "res"), "result.json")
		want(t, "plot -", complete("udpstp", "plot", "-"), "--output", "-o", "--help")
		want(t, "completion ", complete("udpstp", "completion", ""), "bash", "zsh", "fish")
		// A space after a completed word: the function is registered
		// without nospace.
		out, err := exec.Command(sh, "--norc", "--noprofile", "-c", "source "+script+"; complete -p udpstp").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "-F _udpstp udpstp") || strings.Contains(string(out), "nospace") {
			t.Errorf("complete -p udpstp: %v %q, want -F _udpstp without nospace", err, out)
		}
	})

	t.Run("zsh", func(t *testing.T) {
		script := completionScript(t, "zsh")
		sh := shell(t, "zsh")
		// complete runs _udpstp with the completion system's functions
		// replaced by ones that print what they were given: compadd's
		// words (and its options, for the suffix), _describe's names,
		// "<files>", "<hosts>".
		complete := func(words ...string) []string {
			t.Helper()
			prog := `compdef() { :; }
compadd() { local a; for a in "$@"; do [[ $a == -S ]] && print -r -- "<suffix>"; done; shift $(( ${@[(i)--]} )); print -rl -- "$@"; }
_describe() { local e; for e in "${(@P)4}"; do print -r -- "${${e%%:*}//\\/}"; done; }
_files() { print -r -- "<files>"; }
_hosts() { print -r -- "<hosts>"; }
source ` + script + `
words=(` + quoteWords(words) + `); CURRENT=` + strconv.Itoa(len(words)) + `
_udpstp || : # no match is status 1`
			cmd := exec.Command(sh, "-f", "-c", prog)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("zsh: %v\n%s", err, out)
			}
			return strings.Fields(string(out))
		}
		has(t, "udpstp ", complete("udpstp", ""), []string{"server", "client", "plot", "completion"})
		has(t, "client --", complete("udpstp", "client", "-"), clientOpts, "--stats-file", "-G")
		want(t, "client -f ", complete("udpstp", "client", "-f", ""), "text", "json", "jsonb", "jsonf")
		want(t, "client --format ", complete("udpstp", "client", "--format", ""), "text", "json", "jsonb", "jsonf")
		want(t, "client -A ", complete("udpstp", "client", "-A", ""), "B", "C")
		want(t, "client -t ", complete("udpstp", "client", "-t", ""))
		want(t, "client ", complete("udpstp", "client", ""), "<hosts>")
		want(t, "plot ", complete("udpstp", "plot", ""), "<files>")
		want(t, "client --output ", complete("udpstp", "client", "--output", ""), "<files>")
		want(t, "completion ", complete("udpstp", "completion", ""), "bash", "zsh", "fish")
	})

	t.Run("fish", func(t *testing.T) {
		script := completionScript(t, "fish")
		sh := shell(t, "fish")
		complete := func(line string) []string {
			t.Helper()
			cmd := exec.Command(sh, "--no-config", "-c", "source "+script+"; complete -C '"+line+"'")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("fish: %v\n%s", err, out)
			}
			var words []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if w, _, _ := strings.Cut(l, "\t"); w != "" {
					words = append(words, w)
				}
			}
			return words
		}
		has(t, "udpstp ", complete("udpstp "), []string{"server", "client", "plot", "completion"})
		want(t, "udpstp cli", complete("udpstp cli"), "client")
		want(t, "client --verb", complete("udpstp client --verb"), "--verbose")
		has(t, "client --", complete("udpstp client --"), []string{"--upstream", "--format", "--verbose", "--output", "--json-stream", "--help"}, "--stats-file")
		want(t, "client --stat", complete("udpstp client --stat"))
		want(t, "client -f ", complete("udpstp client -f "), "text", "json", "jsonb", "jsonf")
		want(t, "client --format ", complete("udpstp client --format "), "text", "json", "jsonb", "jsonf")
		want(t, "client -A ", complete("udpstp client -A "), "B", "C")
		want(t, "server --log-level ", complete("udpstp server --log-level "), "debug", "info", "warn", "error")
		has(t, "plot res", complete("udpstp plot res"), []string{"result.json"})
		has(t, "client --output res", complete("udpstp client --output res"), []string{"result.json"})
		want(t, "completion ", complete("udpstp completion "), "bash", "zsh", "fish")
	})
}

// quoteWords is words as a shell array's single-quoted elements.
func quoteWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + w + "'"
	}
	return strings.Join(q, " ")
}

// An enumerated option's values, offered by the completion scripts, are
// ones its parser takes and its help names.
func TestCompletionValuesAccepted(t *testing.T) {
	n := 0
	for i := range options {
		o := &options[i]
		for _, v := range o.values {
			n++
			if v != "text" && !strings.Contains(o.usage, v) {
				t.Errorf("%s: value %q not in its help %q", o, v, o.usage)
			}
			var err error
			switch o.name {
			case "format":
				_, err = report.ParseFormat(v)
			case "log-level":
				_, err = server.ParseLogLevel(v)
			}
			if err != nil {
				t.Errorf("%s: value %q refused: %v", o, v, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no option has values")
	}
}
