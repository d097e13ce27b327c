package main

// The drop-in udpst (udpst.go): our binary through a symlink named udpst
// takes OB-UDPST's command line and gives its exit statuses and JSON keys.

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestUdpstArgs: the role follows -u/-d wherever they stand, options are
// OB-UDPST's letters only (bundled, glued, anywhere), and what getopt or
// udpst refuses is refused.
func TestUdpstArgs(t *testing.T) {
	for _, c := range []struct {
		in     string
		want   string // udpstp's arguments, or "usage", or "getopt: MSG", or "config"
		reason string
	}{
		{"", "server --", "no direction: server"},
		{"-p 5000 127.0.0.1", "server -p 5000 -- 127.0.0.1", ""},
		{"127.0.0.1 -d -t5", "client -d -t 5 -- 127.0.0.1", "options after the host, value glued"},
		{"-vdt 5 h", "client -v -d -t 5 -- h", "bundle"},
		{"-i -3 -u h", "client -i -3 -u -- h", "value starting with '-'"},
		{"-a --key -d h", "client -a --key -d -- h", "value starting with '--'"},
		{"-d -- -h", "client -d -- -h", "positional after --"},
		{"-?", "usage", ""},
		{"-d -? h", "usage", ""},
		{"-W", "getopt: invalid option -- 'W'", ""},
		{"-t", "getopt: option requires an argument -- 't'", ""},
		{"-h", "getopt: option requires an argument -- 'h'", "-h is the high-speed delta, not help"},
		{"--output x -d h", "getopt: invalid option -- '-'", "our long options are udpstp's"},
		{"--help", "getopt: invalid option -- '-'", ""},
		{"-output h", "client -o -u -t put -- h", "a long name is a bundle of letters: -o -u -t put"},
		{"-v=false", "getopt: invalid option -- '='", ""},
		{"-dé h", "getopt: invalid option -- 'é'", "a letter beyond ASCII"},
		{"-u -d h", "config", "udpst refuses both directions"},
		{"a b", "config", "a server takes one address"},
		{"-d", "config", "a client needs a server"},
	} {
		args, usage, _, err := udpstArgs(strings.Fields(c.in))
		var got string
		var ge getoptError
		var ec cli.ExitCoder
		switch {
		case errors.As(err, &ge):
			got = "getopt: " + ge.msg
		case errors.As(err, &ec):
			got = "config"
			if ec.ExitCode() != exitConfig {
				t.Errorf("%q: exit %d, want %d", c.in, ec.ExitCode(), exitConfig)
			}
		case err != nil:
			got = "error: " + err.Error()
		case usage:
			got = "usage"
		default:
			got = strings.Join(args, " ")
		}
		if got != c.want {
			t.Errorf("udpst %s (%s): got %q, want %q", c.in, c.reason, got, c.want)
		}
	}
}

// TestUdpstUsageListsEveryLetter: the usage names every OB-UDPST option.
func TestUdpstUsageListsEveryLetter(t *testing.T) {
	var b bytes.Buffer
	writeUdpstUsage(&b, "udpst")
	for _, l := range obLetters {
		if !strings.Contains(b.String(), " -"+l+" ") {
			t.Errorf("usage lacks -%s", l)
		}
	}
}

// obLetters are the options of OB-UDPST 9.0.0's getopt string.
var obLetters = strings.Split("ud46Cx1evsfjTDXSOBrioRayKmGnItPpAbLUFchqEMlkZ", "")

// TestUdpstLegacySubInterval: -P below 100 is never OB-UDPST 9.0.0's ms
// (100-10000): 1-10 are OB-UDPST 8.x's seconds, read as such with a line
// on standard error; 11-99 are left to the range check (exit 50), with a
// line that says neither unit fits; 9.0.0's ms and a server's -P (which
// udpst refuses) are untouched.
func TestUdpstLegacySubInterval(t *testing.T) {
	for _, c := range []struct {
		in, want string
		note     bool
	}{
		{"-d -P 1 h", "client -d -P 1000 -- h", true},
		{"-dP10 h", "client -d -P 10000 -- h", true},
		{"h -u -P 2 -t 5", "client -u -P 2000 -t 5 -- h", true},
		{"-d -P 1 -P 2 h", "client -d -P 1 -P 2000 -- h", true}, // getopt keeps the last
		{"-d -P 500 h", "client -d -P 500 -- h", false},
		{"-d -P 100 h", "client -d -P 100 -- h", false},
		{"-d -P 50 h", "client -d -P 50 -- h", true},
		{"-d -P 0 h", "client -d -P 0 -- h", false},
		{"-d -P x h", "client -d -P x -- h", false},
		{"-d -a -P h", "client -d -a -P -- h", false}, // a key that reads -P
		{"-P 1", "server -P 1 --", false},
	} {
		args, _, notes, err := udpstArgs(strings.Fields(c.in))
		if err != nil {
			t.Errorf("udpst %s: %v", c.in, err)
			continue
		}
		if got := strings.Join(args, " "); got != c.want || (len(notes) == 1) != c.note || len(notes) > 1 {
			t.Errorf("udpst %s: %q, notes %q; want %q, a note: %v", c.in, got, notes, c.want, c.note)
		}
	}
	var out, errs bytes.Buffer
	if code := runUdpst([]string{"udpst", "-d", "-P", "50", "-t", "5", "h"}, &out, &errs); code != exitConfig ||
		!strings.Contains(out.String(), "out-of-range for --sub-interval/-P (100-10000)") ||
		errs.String() != "udpst: -P 50 is neither ms (OB-UDPST 9.0.0: 100-10000) nor seconds (OB-UDPST 8.x: 1-10)\n" {
		t.Errorf("-P 50: exit %d\nstdout %s\nstderr %s", code, out.String(), errs.String())
	}
}
