package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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

// The scripts complete for real: bash through the binary (commands, a
// command's own options, never the other role's hidden ones, nothing but
// files for plot's argument), fish from its static lists.
func TestCompletionWorks(t *testing.T) {
	processTest(t)
	binDir := filepath.Dir(udpstpBin)
	path := binDir + string(os.PathListSeparator) + os.Getenv("PATH")
	t.Run("bash", func(t *testing.T) {
		script := completionScript(t, "bash")
		complete := func(words ...string) []string {
			t.Helper()
			q := make([]string, len(words))
			for i, w := range words {
				q[i] = "'" + w + "'"
			}
			prog := "source " + script + "; COMP_WORDS=(" + strings.Join(q, " ") + "); COMP_CWORD=" +
				strconv.Itoa(len(words)-1) + `; _udpstp_bash_autocomplete; printf '%s\n' "${COMPREPLY[@]}"`
			cmd := exec.Command(shell(t, "bash"), "--norc", "--noprofile", "-c", prog)
			cmd.Env = append(os.Environ(), "PATH="+path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("bash: %v\n%s", err, out)
			}
			return strings.Fields(string(out))
		}
		if got := complete("udpstp", "pl"); strings.Join(got, " ") != "plot" {
			t.Errorf("udpstp pl<TAB>: %q, want plot", got)
		}
		if got := complete("udpstp", "client", "--verb"); strings.Join(got, " ") != "--verbose" {
			t.Errorf("client --verb<TAB>: %q", got)
		}
		if got := complete("udpstp", "client", "--stat"); len(got) != 0 {
			t.Errorf("client --stat<TAB> offers the server's option: %q", got)
		}
		if got := complete("udpstp", "server", "--stat"); strings.Join(got, " ") != "--stats-file" {
			t.Errorf("server --stat<TAB>: %q", got)
		}
		if got := complete("udpstp", "plot", "-"); strings.Join(got, " ") != "--output -o --help" {
			t.Errorf("plot -<TAB>: %q", got)
		}
	})
	t.Run("fish", func(t *testing.T) {
		script := completionScript(t, "fish")
		complete := func(line string) string {
			t.Helper()
			cmd := exec.Command(shell(t, "fish"), "--no-config", "-c", "source "+script+"; complete -C '"+line+"'")
			cmd.Env = append(os.Environ(), "PATH="+path)
			cmd.Dir = t.TempDir()
			if err := os.WriteFile(filepath.Join(cmd.Dir, "result.json"), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("fish: %v\n%s", err, out)
			}
			return string(out)
		}
		if got := complete("udpstp cli"); !strings.HasPrefix(got, "client\t") {
			t.Errorf("udpstp cli<TAB>: %q", got)
		}
		if got := complete("udpstp client --verb"); !strings.HasPrefix(got, "--verbose\t") {
			t.Errorf("client --verb<TAB>: %q", got)
		}
		if got := complete("udpstp client --stat"); got != "" {
			t.Errorf("client --stat<TAB> offers the server's option: %q", got)
		}
		if got := complete("udpstp plot res"); !strings.Contains(got, "result.json") {
			t.Errorf("plot res<TAB> does not complete the file: %q", got)
		}
	})
}
