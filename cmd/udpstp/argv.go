package main

// Argument permutation. OB-UDPST reads its command line with getopt, which
// takes options anywhere (`udpst -d host -t 5`), option letters bundled
// (`-vd`) and values glued to their letter (`-t5`, `-i-3`). urfave/cli v2
// stops at the first positional argument and would silently ignore the
// rest, and Go's flag package knows neither bundles nor glued values. So
// `udpstp server` and `udpstp client` take their arguments raw, rewrite
// them here into options first, then "--", then the positional arguments,
// and only then let cli parse them.

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// permutedArgs is a command line split the way getopt reads it.
type permutedArgs struct {
	opts []string // options, one token per option and one per value
	args []string // positional arguments, in order
	help bool     // --help: print help, exit 0
	// usage is -?: print help and exit 50, like udpst.
	usage bool
	// missing names an option that needs a value and came last. Go's
	// flag package would take the "--" that tokens adds as its value.
	missing string
	// unknown is the first option that names no flag, as typed: Go's
	// flag package would echo --bogus as -bogus.
	unknown string
}

// tokens returns the arguments for cli: options, "--", positional ones.
// The "--" keeps a positional argument that starts with '-' (one that came
// after the user's own "--") from being read as an option.
func (p permutedArgs) tokens() []string {
	out := append(append([]string(nil), p.opts...), "--")
	return append(out, p.args...)
}

// takesValue maps every name and alias of flags to whether it takes a
// value, so permutation knows which option consumes the next argument.
// It is derived from the flag definitions, never kept by hand.
func takesValue(flags []cli.Flag) map[string]bool {
	m := make(map[string]bool)
	for _, f := range flags {
		v := false
		if d, ok := f.(cli.DocGenerationFlag); ok {
			v = d.TakesValue()
		}
		for _, n := range f.Names() {
			m[n] = v
		}
	}
	return m
}

// permute splits in as getopt would with the given flags: everything
// after "--" is positional; "-" alone is positional; "--name[=v]" and,
// as Go's flag package allows, "-name[=v]" for a long name are one
// option; any other "-abc" is a bundle of letters, where a letter that
// takes a value takes the rest of the token ("-t5", "-i-3"; a leading '='
// is dropped, so "-t=5" works as in Go) or else the next argument, even if
// it starts with '-' ("-i -3"). Unknown options are passed on for cli to
// report.
func permute(in []string, flags []cli.Flag) permutedArgs {
	takes := takesValue(flags)
	var p permutedArgs
	for i := 0; i < len(in); i++ {
		s := in[i]
		switch {
		case s == "--":
			p.args = append(p.args, in[i+1:]...)
			return p
		case len(s) < 2 || s[0] != '-':
			p.args = append(p.args, s)
		case s == "--help" || s == "-help":
			p.help = true
		case strings.HasPrefix(s, "--") || isLongName(s[1:], takes):
			name, _, hasValue := strings.Cut(strings.TrimPrefix(s[1:], "-"), "=")
			p.opts = append(p.opts, s)
			if _, known := takes[name]; !known && p.unknown == "" {
				p.unknown, _, _ = strings.Cut(s, "=")
			}
			switch {
			case !takes[name] || hasValue:
			case i+1 < len(in):
				i++
				p.opts = append(p.opts, in[i])
			default:
				p.missing = name
			}
		default:
			i = p.bundle(in, i, takes)
		}
	}
	return p
}

// isLongName reports whether body (a token without its '-') names a
// multi-letter flag, which then wins over reading it as a bundle.
func isLongName(body string, takes map[string]bool) bool {
	name, _, _ := strings.Cut(body, "=")
	_, ok := takes[name]
	return len(name) > 1 && ok
}

// bundle splits in[i], a bundle of option letters, and returns the index
// of the last argument it used.
func (p *permutedArgs) bundle(in []string, i int, takes map[string]bool) int {
	body := in[i][1:]
	for j, r := range body {
		name := string(r)
		rest := body[j+len(name):]
		if r == '?' {
			p.usage = true
			continue
		}
		value, known := takes[name]
		switch {
		case !known:
			p.opts = append(p.opts, "-"+name)
			if p.unknown == "" {
				p.unknown = "-" + name
			}
		case !value && strings.HasPrefix(rest, "="):
			p.opts = append(p.opts, "-"+name+rest) // -v=false, Go style
			return i
		case !value:
			p.opts = append(p.opts, "-"+name)
		case rest != "":
			p.opts = append(p.opts, "-"+name, strings.TrimPrefix(rest, "="))
			return i
		case i+1 < len(in):
			p.opts = append(p.opts, "-"+name, in[i+1])
			return i + 1
		default:
			p.missing = name
		}
	}
	return i
}

// getoptCommand returns cmd made to read its arguments as getopt does.
// cmd keeps its name, help and flags (built by newFlags, for help and
// completion), but cli does not parse them: its Action permutes the raw
// arguments, handles --help and -?, then runs an inner command with fresh
// flags from newFlags over the permuted arguments, and action there.
// action sees only positional arguments in c.Args(); one that starts with
// '-' (it came after "--") is refused before action runs.
func getoptCommand(cmd *cli.Command, newFlags func() []cli.Flag, action cli.ActionFunc) *cli.Command {
	cmd.Flags = newFlags()
	cmd.SkipFlagParsing = true
	cmd.HideHelpCommand = true // else a server named "help" or "h" would print help
	cmd.CustomHelpTemplate = cli.CommandHelpTemplate
	cmd.OnUsageError = usageError
	cmd.BashComplete = completeVisibleFlags
	cmd.Action = func(c *cli.Context) error {
		p := permute(c.Args().Slice(), c.Command.Flags)
		if p.help || p.usage {
			cli.HelpPrinter(c.App.Writer, c.Command.CustomHelpTemplate, c.Command)
			if p.usage {
				return cli.Exit("", exitConfig)
			}
			return nil
		}
		if p.unknown != "" {
			return configError("ERROR: Unknown option %s%s (udpstp %s --help lists the options)",
				p.unknown, suggestion(p.unknown, c.Command.Flags), c.Command.Name)
		}
		if p.missing != "" {
			return configError("ERROR: Option %s needs a value", flagNamed(c.Command.Flags, p.missing))
		}
		inner := &cli.Command{
			Name:     c.Command.Name,
			HelpName: c.Command.HelpName,
			Flags:    newFlags(),
			HideHelp: true, // handled above
			OnUsageError: func(c *cli.Context, err error, _ bool) error {
				return configError("%v (udpstp %s --help lists the options)", err, c.Command.Name)
			},
			Action: func(c *cli.Context) error {
				for _, a := range c.Args().Slice() {
					if strings.HasPrefix(a, "-") {
						return configError("ERROR: Unexpected argument '%s' (an address or file name cannot start with '-'; options go before --)", a)
					}
				}
				return action(c)
			},
		}
		ic := cli.NewContext(c.App, nil, c)
		ic.Command = inner
		return inner.Run(ic, append([]string{inner.Name}, p.tokens()...)...)
	}
	return cmd
}

// flagNamed returns how messages name the flag with the given name or
// alias: --long/-l, as option.String does for the option table.
func flagNamed(flags []cli.Flag, name string) string {
	for _, f := range flags {
		names := f.Names()
		if !slices.Contains(names, name) {
			continue
		}
		s := "--" + names[0]
		if len(names) > 1 {
			s += "/-" + names[1]
		}
		return s
	}
	return "-" + name
}

// suggestion is ": did you mean --name?" for the visible long option
// nearest to the unknown option typed (by edit distance, at most 2 and
// less than half its length, or the one option it begins), else "".
func suggestion(typed string, flags []cli.Flag) string {
	name := strings.TrimLeft(typed, "-")
	if len(name) < 2 {
		return ""
	}
	best, bestD, prefixed := "", 3, []string{}
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		long := f.Names()[0]
		if strings.HasPrefix(long, name) {
			prefixed = append(prefixed, long)
		}
		if d := editDistance(name, long); d < bestD && 2*d < len(name) {
			best, bestD = long, d
		}
	}
	if best == "" && len(prefixed) == 1 {
		best = prefixed[0]
	}
	if best == "" {
		return ""
	}
	return ": did you mean --" + best + "?"
}

// editDistance is the Levenshtein distance of a and b (bytes: option
// names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
