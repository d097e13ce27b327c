package main

// The drop-in udpst: invoked as `udpst` (argv[0]'s base name, as through
// the symlink the Debian package registers with update-alternatives),
// udpstp takes OB-UDPST 9.0.0's command line: no subcommand, getopt's
// single-letter options anywhere, the client role with -u or -d and the
// server role without. The command line is read by the same permutation
// and option table as `udpstp client` and `udpstp server` (argv.go,
// flags.go), restricted to OB-UDPST's letters, then run as one of them.
//
// Kept for interop with scripts written for OB-UDPST (its exit codes, its
// messages on standard output): a getopt error (unknown letter, missing
// value, and our long options, which udpst does not have) prints getopt's
// line on standard error and the usage on standard output, exit 50; -?
// prints the usage, exit 50; a configuration error is one line on
// standard output, exit 50 (51 for a key file).

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/udpstp/udpstp/control"
	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/internal/buildinfo"
)

// dropInName is the name under which udpstp behaves as OB-UDPST's udpst.
const dropInName = "udpst"

// isDropIn reports whether argv0 invokes the drop-in udpst.
func isDropIn(argv0 string) bool { return filepath.Base(argv0) == dropInName }

// letterFlags are OB-UDPST's options as cli flags named by their letter
// only, so that permute reads every "-word" as a bundle of letters, as
// getopt does, and never as one of our long names.
func letterFlags() []cli.Flag {
	var flags []cli.Flag
	for i := range options {
		o := &options[i]
		switch {
		case o.letter == "":
		case o.kind == switchOpt:
			flags = append(flags, &cli.BoolFlag{Name: o.letter})
		default:
			flags = append(flags, &cli.StringFlag{Name: o.letter})
		}
	}
	return flags
}

// getoptError is a command line getopt itself refuses: udpst prints
// getopt's message and its usage, and exits 50.
type getoptError struct{ msg string }

func (e getoptError) Error() string { return e.msg }

// legacySubInterval reads -P's value as OB-UDPST 8.x scripts write it:
// releases 7.x and 8.x took the Sub-Interval period in seconds (1-10),
// 9.0.0 takes it in ms (100-10000), and refuses every value of the
// older range. A value below 100 is therefore never 9.0.0's: 1-10 are
// taken as 8.x's seconds, 11-99 are left to the range check (out of range
// in both units), each with a line that says so (docs/compatibility.md,
// "Options of older releases").
func legacySubInterval(v string) (string, string) {
	n, err := strconv.Atoi(v)
	switch {
	case err != nil || n < 1 || n >= control.MinSubIntPeriod:
		return v, ""
	case n <= legacyMaxSubIntSec:
		return strconv.Itoa(n * 1000), fmt.Sprintf("udpst: -P %d read as %d s (OB-UDPST 8.x's unit), %d ms: OB-UDPST 9.0.0 takes -P in ms (%d-%d)",
			n, n, n*1000, control.MinSubIntPeriod, control.MaxSubIntPeriod)
	default:
		return v, fmt.Sprintf("udpst: -P %d is neither ms (OB-UDPST 9.0.0: %d-%d) nor seconds (OB-UDPST 8.x: 1-%d)",
			n, control.MinSubIntPeriod, control.MaxSubIntPeriod, legacyMaxSubIntSec)
	}
}

// legacyMaxSubIntSec is the longest Sub-Interval period of OB-UDPST 7.x
// and 8.x, in seconds.
const legacyMaxSubIntSec = 10

// udpstArgs turns udpst's arguments (without argv[0]) into udpstp's:
// "client" or "server", the options, "--", the positional arguments.
// usage is true for -?. The checks that decide the role are OB-UDPST's
// (RFC 9946 leaves the command line to implementations): -u with -d is
// refused, a server takes at most one address. notes are the lines to
// print on standard error where it read an option as an older OB-UDPST
// release meant it (legacySubInterval).
func udpstArgs(in []string) (args []string, usage bool, notes []string, err error) {
	subInt := -1 // the client's -P value in p.opts (the last one, which getopt keeps)
	flags := letterFlags()
	takes := takesValue(flags)
	p := permute(in, flags)
	if p.help { // --help or -help: getopt has no long options
		return nil, false, nil, getoptError{"invalid option -- '-'"}
	}
	var up, down bool
	for i := 0; i < len(p.opts); i++ {
		s := p.opts[i]
		if strings.HasPrefix(s, "--") {
			return nil, false, nil, getoptError{"invalid option -- '-'"}
		}
		_, size := utf8.DecodeRuneInString(s[1:])
		name := s[1 : 1+size]
		value, known := takes[name]
		switch {
		case !known:
			return nil, false, nil, getoptError{fmt.Sprintf("invalid option -- '%s'", name)}
		case len(s) > 1+size: // "-v=x", which Go's flag package reads; getopt does not
			return nil, false, nil, getoptError{fmt.Sprintf("invalid option -- '%c'", s[1+size])}
		case value:
			if name == "P" && i+1 < len(p.opts) {
				subInt = i + 1
			}
			i++
		case name == "u":
			up = true
		case name == "d":
			down = true
		}
	}
	if p.missing != "" {
		return nil, false, nil, getoptError{fmt.Sprintf("option requires an argument -- '%s'", p.missing)}
	}
	if p.usage {
		return nil, true, nil, nil
	}
	role := "server"
	switch {
	case up && down:
		// udpstp client reads -u -d as --bidirectional; udpst refuses it.
		return nil, false, nil, configError("ERROR: Upstream and Downstream options are mutually exclusive")
	case (up || down) && len(p.args) == 0:
		// udpst says so before it reads any other option.
		return nil, false, nil, configError("ERROR: Server hostname or IP address required when client")
	case up || down:
		role = "client"
	case len(p.args) > 1:
		return nil, false, nil, configError("ERROR: Server only allows one local bind address or hostname")
	}
	args = append([]string{role}, p.tokens()...)
	if role == "client" && subInt >= 0 { // a server refuses -P whatever its value
		v, note := legacySubInterval(args[subInt+1]) // after role
		args[subInt+1] = v
		if note != "" {
			notes = append(notes, note)
		}
	}
	return args, false, notes, nil
}

// runUdpst runs udpstp as udpst with argv (argv[0] included) and returns
// the exit status.
func runUdpst(argv []string, stdout, stderr io.Writer) int {
	args, usage, notes, err := udpstArgs(argv[1:])
	for _, n := range notes {
		fmt.Fprintln(stderr, n)
	}
	if ge, ok := err.(getoptError); ok {
		fmt.Fprintf(stderr, "%s: %s\n", argv[0], ge.msg)
		usage = true
	}
	if usage {
		writeUdpstUsage(stdout, argv[0])
		return exitConfig
	}
	if err == nil {
		app := newApp()
		app.Writer, app.ErrWriter = stdout, stderr
		err = app.Run(append([]string{argv[0]}, args...))
	}
	if err == nil {
		return 0
	}
	if msg := strings.TrimSpace(err.Error()); msg != "" {
		fmt.Fprintln(stdout, strings.ReplaceAll(msg, "\n", "; "))
	}
	return exitCode(err)
}

// writeUdpstUsage prints udpst's usage from the option table: every
// option OB-UDPST has, by its letter, with our help text; (c) and (s)
// mark the options of one role, as in udpst's usage.
func writeUdpstUsage(w io.Writer, argv0 string) {
	fmt.Fprintf(w, "udpstp %s as udpst (OB-UDPST's command line)\n", buildinfo.Get().Version)
	fmt.Fprintf(w, "Usage: %s [option]... [server[:<port>]]...\n\n", argv0)
	fmt.Fprintln(w, "With -u or -d: a client, testing upstream or downstream against the servers")
	fmt.Fprintln(w, "(at least one). Without: a server, on the local address given or on all.")
	fmt.Fprintln(w, "\nOptions:")
	for i := range options {
		o := &options[i]
		if o.letter == "" {
			continue
		}
		mark := "   "
		switch o.role {
		case forClient:
			mark = "(c)"
		case forServer:
			mark = "(s)"
		}
		placeholder, text := unquoteUsage(o.usage)
		fmt.Fprintf(w, "%s -%s %-12s %s\n", mark, o.letter, placeholder, text)
	}
	fmt.Fprintln(w, "\n(c) = client only, (s) = server only. `udpstp --help` lists our long options,")
	fmt.Fprintln(w, "which the udpstp command (not udpst) takes.")
}
