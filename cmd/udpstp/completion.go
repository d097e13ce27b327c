package main

// Shell completion. bash and zsh complete through the binary itself: their
// scripts (urfave/cli's own bash_autocomplete and zsh_autocomplete, with
// the program name fixed) run `udpstp ... --generate-bash-completion`,
// which lists the commands or the options of the command typed, so the
// lists never go stale. fish gets cli's generated, static script.

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// completionShells are the shells `udpstp completion` writes scripts for.
var completionShells = []string{"bash", "zsh", "fish"}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		UsageText: "udpstp completion bash|zsh|fish",
		Description: "Prints a completion script on standard output. Install it where the shell\n" +
			"looks: bash: /usr/share/bash-completion/completions/udpstp (or source it\n" +
			"from ~/.bashrc); zsh: a file _udpstp in a directory of $fpath; fish:\n" +
			"~/.config/fish/completions/udpstp.fish. make completion writes all three\n" +
			"to build/completion.",
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return configError("completion: name one shell: %s", strings.Join(completionShells, ", "))
			}
			return writeCompletion(c.App, c.App.Writer, c.Args().First())
		},
	}
}

// writeCompletion writes the script for shell.
func writeCompletion(app *cli.App, w io.Writer, shell string) error {
	var script string
	switch shell {
	case "bash":
		script = bashCompletion
	case "zsh":
		script = zshCompletion
	case "fish":
		s, err := fishApp(app).ToFishCompletion()
		if err != nil {
			return fmt.Errorf("completion: %w", err)
		}
		script = s + fishFileArgs
	default:
		return configError("completion: unknown shell %q (%s)", shell, strings.Join(completionShells, ", "))
	}
	_, err := io.WriteString(w, strings.ReplaceAll(script, "@PROG@", app.Name))
	return err
}

// fishApp is app without cli's help command for ToFishCompletion. cli
// adds that command, one global value, to the subcommands of every
// command that runs, itself included once it has run (as in the tests),
// and the fish generator then recurses without end. udpstp's commands
// have no subcommands of their own; --help is still completed.
func fishApp(app *cli.App) *cli.App {
	fa := &cli.App{Name: app.Name, Usage: app.Usage, Flags: app.Flags}
	for _, c := range app.Commands {
		if c.Name == "help" {
			continue
		}
		cc := *c
		cc.Subcommands = nil
		fa.Commands = append(fa.Commands, &cc)
	}
	return fa
}

// bashCompletion is urfave/cli v2's autocomplete/bash_autocomplete for
// @PROG@, made to work without the bash-completion package too (cli's
// fallback calls bash-completion's _get_comp_words_by_ref). `-o default`
// falls back to file names where udpstp offers nothing (plot's result
// file, option values).
const bashCompletion = `# bash completion for @PROG@ (udpstp completion bash)

_@PROG@_bash_autocomplete() {
  local cur words cword requestComp opts
  COMPREPLY=()
  if declare -F _init_completion >/dev/null 2>&1; then
    _init_completion -n "=:" || return
  else
    cur="${COMP_WORDS[COMP_CWORD]}"
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  fi
  words=("${words[@]:0:$cword}")
  if [[ "$cur" == "-"* ]]; then
    requestComp="${words[*]} ${cur} --generate-bash-completion"
  else
    requestComp="${words[*]} --generate-bash-completion"
  fi
  opts=$(eval "${requestComp}" 2>/dev/null)
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}

complete -o bashdefault -o default -o nospace -F _@PROG@_bash_autocomplete @PROG@
`

// zshCompletion is urfave/cli v2's autocomplete/zsh_autocomplete for
// @PROG@: files where udpstp offers nothing.
const zshCompletion = `#compdef @PROG@
# zsh completion for @PROG@ (udpstp completion zsh)

_@PROG@_zsh_autocomplete() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi

  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}

compdef _@PROG@_zsh_autocomplete @PROG@
`

// fishFileArgs lets fish complete plot's result file: cli's script marks
// every option "no files" (-f), which fish applies to the arguments too.
const fishFileArgs = `complete -c @PROG@ -n '__fish_seen_subcommand_from plot' -F
`

// completeVisibleFlags is the completion of commands whose flags include
// hidden ones (getoptCommand's: the other role's options): cli's default
// lists hidden string flags too, so a client would be offered the
// server's -G. It lists the visible flags whose name starts with what was
// typed; for anything else it offers nothing, and the shell files.
func completeVisibleFlags(c *cli.Context) {
	// As cli's default, the word being completed is the argument before
	// --generate-bash-completion.
	var last string
	if n := len(os.Args); n > 2 {
		last = os.Args[n-2]
	}
	if !strings.HasPrefix(last, "-") {
		return
	}
	typed := strings.TrimLeft(last, "-")
	for _, f := range c.Command.VisibleFlags() {
		for _, n := range f.Names() {
			if len(n) == 1 && strings.HasPrefix(last, "--") {
				continue
			}
			if strings.HasPrefix(n, typed) && n != typed {
				dash := "--"
				if len(n) == 1 {
					dash = "-"
				}
				fmt.Fprintln(c.App.Writer, dash+n)
			}
		}
	}
}
