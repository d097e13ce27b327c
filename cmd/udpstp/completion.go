package main

// Shell completion. The bash, zsh and fish scripts are generated here from
// the commands and their flags, which for server and client are the option
// table (flags.go): each command's long and short options, which of them
// take a value, which value is a file name (its placeholder says "file"),
// and the words an enumerated value may be (option.values: -f's formats,
// -A's algorithms, ...). The scripts are static: completing does not run
// the binary, and `udpstp completion SHELL` after an upgrade writes the new
// lists. Each shell adds a space after a completed word itself (bash: no
// "-o nospace"; zsh: compadd's default suffix; fish: its own).

import (
	"fmt"
	"io"
	"os"
	"sort"
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
	m := completionModel(app)
	var script string
	switch shell {
	case "bash":
		script = m.bash()
	case "zsh":
		script = m.zsh()
	case "fish":
		script = m.fish()
	default:
		return configError("completion: unknown shell %q (%s)", shell, strings.Join(completionShells, ", "))
	}
	_, err := io.WriteString(w, script)
	return err
}

// argKind is what a command's positional arguments are.
type argKind uint8

const (
	argNone  argKind = iota
	argHosts         // server: the addresses to bind; client: the servers
	argFiles         // plot: the result file
	argWords         // completion: the shell
)

// compFlag is one option as the scripts complete it.
type compFlag struct {
	long, short string // without dashes; short is "" where there is none
	desc        string
	value       bool     // takes a value (the next word)
	file        bool     // the value is a file name
	values      []string // the words the value may be, if enumerated
}

// names are the option's spellings, long first.
func (f *compFlag) names() []string {
	n := []string{"--" + f.long}
	if f.short != "" {
		n = append(n, "-"+f.short)
	}
	return n
}

// compCmd is one command.
type compCmd struct {
	name, desc string
	flags      []compFlag
	args       argKind
	words      []string // argWords
}

// compModel is the program's completion: its name, global flags and
// commands.
type compModel struct {
	prog  string
	flags []compFlag
	cmds  []compCmd
}

// completionModel reads the app's visible commands and flags; options of
// the option table bring their enumerated values.
func completionModel(app *cli.App) compModel {
	m := compModel{prog: app.Name, flags: []compFlag{
		{long: "help", desc: "show help"},
		{long: "version", short: "V", desc: "print the version and exit"},
	}}
	for _, c := range app.VisibleCommands() {
		if c.Name == "help" {
			continue
		}
		cc := compCmd{name: c.Name, desc: c.Usage}
		switch c.Name {
		case "server", "client":
			cc.args = argHosts
		case "plot":
			cc.args = argFiles
		case "completion":
			cc.args, cc.words = argWords, completionShells
		case "history":
			cc.args, cc.words = argWords, historyVerbs
		}
		help := false
		for _, f := range c.VisibleFlags() {
			cf := compFlag{}
			for _, n := range f.Names() {
				switch {
				case cf.long == "" && len(n) > 1:
					cf.long = n
				case len(n) == 1:
					cf.short = n
				}
			}
			if cf.long == "" {
				continue
			}
			help = help || cf.long == "help"
			if df, ok := f.(cli.DocGenerationFlag); ok {
				_, cf.desc = unquoteUsage(df.GetUsage())
				cf.value = df.TakesValue()
			}
			if sf, ok := f.(*cli.StringFlag); ok {
				cf.file = sf.TakesFile
			}
			if o, ok := optionByName[cf.long]; ok && (c.Name == "server" || c.Name == "client") {
				cf.values = o.values
			}
			cc.flags = append(cc.flags, cf)
		}
		if !help {
			cc.flags = append(cc.flags, compFlag{long: "help", desc: "show help"})
		}
		m.cmds = append(m.cmds, cc)
	}
	return m
}

// names are the commands' names.
func (m *compModel) names() []string {
	var n []string
	for _, c := range m.cmds {
		n = append(n, c.name)
	}
	return n
}

// fn is the shell function's name: _udpstp.
func (m *compModel) fn() string { return "_" + strings.NewReplacer("-", "_", ".", "_").Replace(m.prog) }

// words joins the names of flags, for a candidate list.
func flagWords(flags []compFlag) string {
	var w []string
	for i := range flags {
		w = append(w, flags[i].names()...)
	}
	return strings.Join(w, " ")
}

// writeValueCases writes a `case $prev in ... esac` (bash and zsh alike)
// over a command's value-taking options, arm writing each branch, or
// nothing where the command has none.
func writeValueCases(b *strings.Builder, flags []compFlag, arm func(pattern string, kind compFlag)) {
	pats, kinds := valueCases(flags)
	if len(pats) == 0 {
		return
	}
	b.WriteString("    case $prev in\n")
	for i, p := range pats {
		arm(p, kinds[i])
	}
	b.WriteString("    esac\n")
}

// valueCases groups a command's value-taking options for a shell's
// `case "$prev"`: one pattern list per kind of value (the same enumerated
// words, files, anything), in the order of the table.
func valueCases(flags []compFlag) (pats []string, kinds []compFlag) {
	idx := map[string]int{}
	for i := range flags {
		f := &flags[i]
		if !f.value {
			continue
		}
		key := fmt.Sprint(f.file, f.values)
		j, ok := idx[key]
		if !ok {
			j = len(pats)
			idx[key] = j
			pats = append(pats, "")
			kinds = append(kinds, compFlag{file: f.file, values: f.values})
		}
		if pats[j] != "" {
			pats[j] += "|"
		}
		pats[j] += strings.Join(f.names(), "|")
	}
	return pats, kinds
}

// bash is the bash script: _udpstp finds the command (the first word
// that is not an option), completes a value after an option that takes
// one (the enumerated words, file names, or nothing: the user types it),
// else the command's options after "-", else its arguments.
func (m *compModel) bash() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bash completion for %s (%s completion bash), generated from its options\n\n", m.prog, m.prog)
	fmt.Fprintf(&b, "%s() {\n", m.fn())
	b.WriteString(`  local cur prev cmd i
  COMPREPLY=()
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=
  (( COMP_CWORD > 0 )) && prev=${COMP_WORDS[COMP_CWORD-1]}
  cmd=
  for (( i = 1; i < COMP_CWORD; i++ )); do
    case ${COMP_WORDS[i]} in
    -*) ;;
    *) cmd=${COMP_WORDS[i]}; break ;;
    esac
  done
  case $cmd in
  "")
    if [[ $cur == -* ]]; then
`)
	fmt.Fprintf(&b, "      COMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", flagWords(m.flags))
	b.WriteString("    else\n")
	fmt.Fprintf(&b, "      COMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", strings.Join(m.names(), " "))
	b.WriteString("    fi\n    ;;\n")
	for _, c := range m.cmds {
		fmt.Fprintf(&b, "  %s)\n", c.name)
		writeValueCases(&b, c.flags, func(p string, k compFlag) {
			fmt.Fprintf(&b, "    %s)\n", p)
			switch {
			case len(k.values) > 0:
				fmt.Fprintf(&b, "      COMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", strings.Join(k.values, " "))
			case k.file:
				b.WriteString("      compopt -o filenames 2>/dev/null\n      COMPREPLY=($(compgen -f -- \"$cur\"))\n")
			}
			b.WriteString("      return 0 ;;\n")
		})
		fmt.Fprintf(&b, "    if [[ $cur == -* ]]; then\n      COMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", flagWords(c.flags))
		switch c.args {
		case argHosts:
			b.WriteString("    else\n      COMPREPLY=($(compgen -A hostname -- \"$cur\"))\n")
		case argFiles:
			b.WriteString("    else\n      compopt -o filenames 2>/dev/null\n      COMPREPLY=($(compgen -f -- \"$cur\"))\n")
		case argWords:
			fmt.Fprintf(&b, "    else\n      COMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", strings.Join(c.words, " "))
		}
		b.WriteString("    fi\n    ;;\n")
	}
	b.WriteString("  esac\n  return 0\n}\n\n")
	fmt.Fprintf(&b, "complete -F %s %s\n", m.fn(), m.prog)
	return b.String()
}

// zshQuote escapes s for a single-quoted zsh word that _describe or
// _arguments reads: quotes for the shell, ':' and brackets for them.
func zshQuote(s string) string {
	s = strings.NewReplacer(`\`, `\\`, `:`, `\:`, `[`, `\[`, `]`, `\]`).Replace(s)
	return strings.ReplaceAll(s, "'", `'\''`)
}

// zsh is the zsh script: _udpstp_candidates prints what fits the word
// being completed, one per line, or "files"/"hosts" for the completion
// system's own file and host name completion; _udpstp hands that to
// compadd (which adds the space after a completed word), _files or
// _hosts. Options are offered with their descriptions through _describe.
func (m *compModel) zsh() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s (%s completion zsh), generated from its options\n\n", m.prog, m.prog, m.prog)
	// The candidates: $1 the word before the current one, $2 the command,
	// $3 the current word.
	fmt.Fprintf(&b, "%s_candidates() {\n  local prev=$1 cmd=$2 cur=$3\n  case $cmd in\n  \"\")\n", m.fn())
	fmt.Fprintf(&b, "    if [[ $cur == -* ]]; then print -rl -- opts; else print -rl -- cmds; fi ;;\n")
	for _, c := range m.cmds {
		fmt.Fprintf(&b, "  %s)\n", c.name)
		writeValueCases(&b, c.flags, func(p string, k compFlag) {
			switch {
			case len(k.values) > 0:
				fmt.Fprintf(&b, "    %s) print -rl -- values %s; return ;;\n", p, strings.Join(k.values, " "))
			case k.file:
				fmt.Fprintf(&b, "    %s) print -rl -- files; return ;;\n", p)
			default:
				fmt.Fprintf(&b, "    %s) print -rl -- none; return ;;\n", p)
			}
		})
		b.WriteString("    if [[ $cur == -* ]]; then print -rl -- opts; return; fi\n")
		switch c.args {
		case argHosts:
			b.WriteString("    print -rl -- hosts ;;\n")
		case argFiles:
			b.WriteString("    print -rl -- files ;;\n")
		case argWords:
			fmt.Fprintf(&b, "    print -rl -- values %s ;;\n", strings.Join(c.words, " "))
		default:
			b.WriteString("    print -rl -- none ;;\n")
		}
	}
	b.WriteString("  esac\n}\n\n")

	// The options of each command, "name:description" for _describe.
	fmt.Fprintf(&b, "%s_opts() {\n  case $1 in\n", m.fn())
	writeOpts := func(pat string, flags []compFlag) {
		fmt.Fprintf(&b, "  %s) reply=(", pat)
		for i := range flags {
			for _, n := range flags[i].names() {
				fmt.Fprintf(&b, "\n    '%s:%s'", zshQuote(n), zshQuote(flags[i].desc))
			}
		}
		b.WriteString("\n  ) ;;\n")
	}
	writeOpts(`""`, m.flags)
	for _, c := range m.cmds {
		writeOpts(c.name, c.flags)
	}
	b.WriteString("  esac\n}\n\n")

	fmt.Fprintf(&b, "%s() {\n", m.fn())
	b.WriteString(`  local cmd i
  local -a cand reply
  cmd=
  for (( i = 2; i < CURRENT; i++ )); do
    if [[ ${words[i]} != -* ]]; then cmd=${words[i]}; break; fi
  done
`)
	fmt.Fprintf(&b, "  cand=(\"${(@f)$(%s_candidates \"${words[CURRENT-1]}\" \"$cmd\" \"${words[CURRENT]}\")}\")\n", m.fn())
	b.WriteString("  case ${cand[1]} in\n")
	fmt.Fprintf(&b, "  opts) %s_opts \"$cmd\"; _describe -t options option reply ;;\n", m.fn())
	b.WriteString("  cmds) reply=(")
	for _, c := range m.cmds {
		fmt.Fprintf(&b, "\n    '%s:%s'", zshQuote(c.name), zshQuote(c.desc))
	}
	b.WriteString("\n  ); _describe -t commands command reply ;;\n")
	b.WriteString("  values) compadd -- \"${(@)cand[2,-1]}\" ;;\n")
	b.WriteString("  files) _files ;;\n")
	b.WriteString("  hosts) _hosts ;;\n")
	b.WriteString("  *) return 1 ;;\n  esac\n}\n\n")
	// Sourced (not autoloaded from $fpath): register; autoloaded, the
	// #compdef line did, and this call completes.
	fmt.Fprintf(&b, "if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then\n  %s \"$@\"\nelse\n  compdef %s %s\nfi\n", m.fn(), m.fn(), m.prog)
	return b.String()
}

// fishQuote quotes s for a single-quoted fish word.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// fish is the fish script: `complete` lines, one per command and per
// option (-x: a value but no files, with its words; -r -F: a file; -f:
// no files where udpstp takes none).
func (m *compModel) fish() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# fish completion for %s (%s completion fish), generated from its options\n\n", m.prog, m.prog)
	fmt.Fprintf(&b, "complete -c %s -f\n", m.prog)
	names := m.names()
	sort.Strings(names)
	noCmd := "not __fish_seen_subcommand_from " + strings.Join(names, " ")
	line := func(cond string, f *compFlag) {
		fmt.Fprintf(&b, "complete -c %s -n %s -l %s", m.prog, fishQuote(cond), f.long)
		if f.short != "" {
			fmt.Fprintf(&b, " -s %s", f.short)
		}
		switch {
		case len(f.values) > 0:
			fmt.Fprintf(&b, " -x -a %s", fishQuote(strings.Join(f.values, " ")))
		case f.file:
			b.WriteString(" -r -F")
		case f.value:
			b.WriteString(" -x")
		}
		fmt.Fprintf(&b, " -d %s\n", fishQuote(f.desc))
	}
	for i := range m.flags {
		line(noCmd, &m.flags[i])
	}
	for _, c := range m.cmds {
		fmt.Fprintf(&b, "complete -c %s -n %s -a %s -d %s\n", m.prog, fishQuote(noCmd), c.name, fishQuote(c.desc))
	}
	for _, c := range m.cmds {
		cond := "__fish_seen_subcommand_from " + c.name
		for i := range c.flags {
			line(cond, &c.flags[i])
		}
		switch c.args {
		case argFiles:
			fmt.Fprintf(&b, "complete -c %s -n %s -F\n", m.prog, fishQuote(cond))
		case argWords:
			fmt.Fprintf(&b, "complete -c %s -n %s -a %s\n", m.prog, fishQuote(cond), fishQuote(strings.Join(c.words, " ")))
		case argHosts:
			fmt.Fprintf(&b, "complete -c %s -n %s -a '(__fish_print_hostnames)'\n", m.prog, fishQuote(cond))
		}
	}
	return b.String()
}

// completeVisibleFlags is the completion of commands whose flags include
// hidden ones (getoptCommand's: the other role's options) for cli's own
// --generate-bash-completion: cli's default lists hidden string flags too,
// so a client would be offered the server's -G. It lists the visible flags
// whose name starts with what was typed; for anything else it offers
// nothing. The scripts above do not use it; scripts written by older
// versions of `udpstp completion` do.
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
