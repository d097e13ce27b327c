package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/buildinfo"
	"github.com/udpstp/udpstp/server"
)

// result is what one in-process run of the app did.
type result struct {
	client *control.ClientConfig // passed to runClient, nil if not called
	server *control.ServerConfig // passed to runServer, nil if not called
	lo     localOptions
	code   int    // exit status; 0 when Run returned nil
	msg    string // the error's message
	out    string // what went to the app's Writer
}

// run runs `udpstp args...` in-process with the client's and the
// server's runners replaced by recorders, and checks that any error is one line.
func run(t *testing.T, args ...string) result {
	t.Helper()
	var r result
	var out bytes.Buffer
	app := newAppWith(runners{
		client: func(_ context.Context, cfg *control.ClientConfig, lo localOptions) int {
			r.client, r.lo = cfg, lo
			return 0
		},
		server: func(_ context.Context, cfg *control.ServerConfig, lo localOptions) error {
			r.server, r.lo = cfg, lo
			return nil
		},
	})
	app.Writer, app.ErrWriter = &out, io.Discard
	err := app.Run(append([]string{"udpstp"}, args...))
	r.out = out.String()
	if err != nil {
		r.code = exitCode(err)
		r.msg = err.Error()
		if strings.Contains(r.msg, "\n") {
			t.Errorf("%q: message is not one line: %q", args, r.msg)
		}
	}
	return r
}

// mustClient runs a client command line that must reach runClient.
func mustClient(t *testing.T, args ...string) (*control.ClientConfig, localOptions) {
	t.Helper()
	r := run(t, append([]string{"client"}, args...)...)
	if r.code != 0 || r.client == nil {
		t.Fatalf("client %q: exit %d %q, want a test run", args, r.code, r.msg)
	}
	return r.client, r.lo
}

// mustServer runs a server command line that must reach runServer.
func mustServer(t *testing.T, args ...string) (*control.ServerConfig, localOptions) {
	t.Helper()
	r := run(t, append([]string{"server"}, args...)...)
	if r.code != 0 || r.server == nil {
		t.Fatalf("server %q: exit %d %q, want a server run", args, r.code, r.msg)
	}
	return r.server, r.lo
}

// mustFail runs a command line that must exit with code and a message
// holding every one of want.
func mustFail(t *testing.T, code int, args []string, want ...string) {
	t.Helper()
	r := run(t, args...)
	if r.code != code {
		t.Errorf("%q: exit %d (%q), want %d", args, r.code, r.msg, code)
		return
	}
	if r.client != nil || r.server != nil {
		t.Errorf("%q: ran although it failed", args)
	}
	for _, w := range want {
		if !strings.Contains(r.msg, w) {
			t.Errorf("%q: message %q lacks %q", args, r.msg, w)
		}
	}
}

func TestClientDefaults(t *testing.T) {
	got, lo := mustClient(t, "-d", "127.0.0.1")
	want := control.DefaultClientConfig()
	want.Servers = []control.ServerAddr{{Host: "127.0.0.1", Port: control.DefaultControlPort}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("client -d 127.0.0.1:\n got %+v\nwant %+v", *got, want)
	}
	if lo != (localOptions{}) {
		t.Errorf("local options %+v, want none", lo)
	}
}

func TestServerDefaults(t *testing.T) {
	got, lo := mustServer(t)
	if want := control.DefaultServerConfig(); !reflect.DeepEqual(*got, want) {
		t.Errorf("server:\n got %+v\nwant %+v", *got, want)
	}
	if lo.Drain == nil {
		t.Error("the server gets no drain signal (the first SIGTERM's)")
	}
	lo.Drain = nil
	if lo != (localOptions{Service: server.DefaultOptions()}) {
		t.Errorf("local options %+v, want the service defaults only", lo)
	}
}

// TestClientOptions maps every client option onto its field; the test
// fails if an option of the table is not exercised here.
func TestClientOptions(t *testing.T) {
	type cc = control.ClientConfig
	tests := []struct {
		args []string
		set  func(*cc)
	}{
		{[]string{"-u"}, func(c *cc) { c.Upstream = true }},
		{[]string{"-d"}, func(c *cc) {}},
		{[]string{"-4"}, func(c *cc) { c.Family = dataphase.FamilyV4 }},
		{[]string{"--ipv6"}, func(c *cc) { c.Family = dataphase.FamilyV6 }},
		{[]string{"-C", "1"}, func(c *cc) {}},
		{[]string{"--connections", "1-1"}, func(c *cc) {}},
		{[]string{"-e"}, func(c *cc) { c.ShowErrors = true }},
		{[]string{"-v"}, func(c *cc) { c.Verbose = true }},
		{[]string{"-s"}, func(c *cc) { c.NoSubInt = true }},
		{[]string{"-f", "json"}, func(c *cc) { c.Format = "json" }},
		{[]string{"-f", "JsonB"}, func(c *cc) { c.Format = "jsonb" }},
		{[]string{"--format", "JSONF"}, func(c *cc) { c.Format = "jsonf" }},
		{[]string{"-j"}, func(c *cc) { c.NoJumbo = true }},
		{[]string{"-T"}, func(c *cc) { c.TraditionalMTU = true }},
		{[]string{"-v", "-D"}, func(c *cc) { c.Verbose, c.Debug = true, true }},
		{[]string{"-X"}, func(c *cc) { c.RandomPayload = true }},
		{[]string{"-B", "500"}, func(c *cc) { c.MaxBandwidth = 500 }},
		{[]string{"-r"}, func(c *cc) { c.LossRatio = true }},
		{[]string{"-i", "3"}, func(c *cc) { c.Bimodal = 3 }},
		{[]string{"-i", "-3"}, func(c *cc) { c.Bimodal, c.Suppress = 3, true }},
		{[]string{"-o"}, func(c *cc) { c.UseOwDelVar = true }},
		{[]string{"-m", "0x28"}, func(c *cc) { c.DSCPECN = 0x28 }},
		{[]string{"-m", "010"}, func(c *cc) { c.DSCPECN = 8 }},
		{[]string{"-m", "255"}, func(c *cc) { c.DSCPECN = 255 }},
		{[]string{"-R"}, func(c *cc) { c.IncludeOooDup = true }},
		{[]string{"-a", "secret"}, func(c *cc) { c.Key = []byte("secret") }},
		{[]string{"-a", "secret", "-y", "5"}, func(c *cc) { c.Key, c.KeyID = []byte("secret"), 5 }},
		{[]string{"-n"}, func(c *cc) { c.NoSeqRollback = true }},
		{[]string{"-I", "20"}, func(c *cc) { c.SRIndex = 20 }},
		{[]string{"-I", "@100"}, func(c *cc) { c.SRIndex, c.StartIndex = 100, true }},
		{[]string{"-I", "0"}, func(c *cc) { c.SRIndex = 0 }},
		{[]string{"-t", "5"}, func(c *cc) { c.TestIntTime = 5 }},
		{[]string{"-P", "100"}, func(c *cc) { c.SubIntPeriod = 100 }},
		{[]string{"-p", "25000"}, func(c *cc) { c.Servers[0].Port = 25000 }},
		{[]string{"-A", "c"}, func(c *cc) { c.Algorithm = dataphase.AlgorithmC }},
		{[]string{"-A", "B"}, func(c *cc) { c.Algorithm = dataphase.AlgorithmB }},
		{[]string{"-b", "0"}, func(c *cc) { c.SockBuf = 0 }},
		{[]string{"-L", "10"}, func(c *cc) { c.LowThresh = 10 }},
		{[]string{"-U", "100"}, func(c *cc) { c.UpperThresh = 100 }},
		{[]string{"-F", "20"}, func(c *cc) { c.TrialInt = 20 }},
		{[]string{"-c", "5"}, func(c *cc) { c.SlowAdjThresh = 5 }},
		{[]string{"-h", "20"}, func(c *cc) { c.HighSpeedDelta = 20 }},
		{[]string{"-q", "0"}, func(c *cc) { c.SeqErrThresh = 0 }},
		{[]string{"-m", "0x02", "-Z", "10"}, func(c *cc) { c.DSCPECN, c.CEThresh = 2, 10 }},
		{[]string{"-m", "1", "--ecn-ce-threshold", "255"}, func(c *cc) { c.DSCPECN, c.CEThresh = 1, 255 }},
		{[]string{"--output", "result.json"}, func(c *cc) { c.OutputFile = "result.json" }},
		{[]string{"--textfile", "udpstp.prom"}, func(c *cc) { c.TextFile = "udpstp.prom" }},
		{[]string{"--protocol", "9"}, func(c *cc) { c.Protocol = 9 }},
		{[]string{"--no-gso"}, func(c *cc) {}}, // localOptions, checked below
		// The plan is in localOptions (plan_test.go); a bidirectional
		// test's idle baseline is in the config.
		{[]string{"--bidirectional"}, func(c *cc) { c.Bimodal, c.Suppress, c.UseOwDelVar = 2, true, true }},
		{[]string{"--repeat", "3", "--pause", "1s"}, func(c *cc) {}},
		{[]string{"-O", "meta_#i_%H.csv"}, func(c *cc) { c.ExportFile = "meta_#i_%H.csv" }},
		{[]string{"--export", "+meta.csv"}, func(c *cc) { c.ExportFile, c.ExportAll = "meta.csv", true }},
		{[]string{"-E", "eth0"}, func(c *cc) { c.Interface = "eth0" }},
		{[]string{"-E", "veth-udpstp0123", "-M"}, func(c *cc) { c.Interface, c.InterfaceMax = "veth-udpstp0123", true }},
		{[]string{"--extensions"}, func(c *cc) { c.Extensions = true }},
		{[]string{"--json-stream"}, func(c *cc) { c.Format = "json" }},
		{[]string{"--json-stream", "-f", "jsonb"}, func(c *cc) { c.Format = "jsonb" }},
		{[]string{"--progress", "Never"}, func(c *cc) {}}, // localOptions, checked below
	}
	used := map[string]bool{}
	for _, tt := range tests {
		args := append([]string{"h"}, tt.args...)
		if !slices.Contains(tt.args, "-u") {
			args = append(args, "-d")
		}
		got, _ := mustClient(t, args...)
		want := control.DefaultClientConfig()
		want.Servers = []control.ServerAddr{{Host: "h", Port: control.DefaultControlPort}}
		tt.set(&want)
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("client %q:\n got %+v\nwant %+v", args, *got, want)
		}
		markUsed(used, tt.args)
	}
	if _, lo := mustClient(t, "-d", "h", "--no-gso"); !lo.NoGSO {
		t.Error("--no-gso did not set localOptions.NoGSO")
	}
	if _, lo := mustClient(t, "-d", "h", "--json-stream", "--progress", "ALWAYS"); !lo.Stream || lo.Progress != progressAlways {
		t.Errorf("--json-stream --progress ALWAYS: %+v", lo)
	}
	for _, o := range options {
		if o.role&forClient != 0 && o.unsupported&forClient == 0 && o.name != "key-file" && o.name != "show-rates" && !used[o.name] {
			t.Errorf("client option %s is not exercised", &o) // key file and -S have tests of their own
		}
	}
}

// TestServerOptions maps every server option onto its field.
func TestServerOptions(t *testing.T) {
	type sc = control.ServerConfig
	tests := []struct {
		args []string
		set  func(*sc)
	}{
		{[]string{"-4"}, func(s *sc) { s.Family = dataphase.FamilyV4 }},
		{[]string{"-6"}, func(s *sc) { s.Family = dataphase.FamilyV6 }},
		{[]string{"-1"}, func(s *sc) { s.OneTest = true }},
		{[]string{"--one-test"}, func(s *sc) { s.OneTest = true }},
		{[]string{"-e"}, func(s *sc) { s.ShowErrors = true }},
		{[]string{"-v"}, func(s *sc) { s.Verbose = true }},
		{[]string{"-s"}, func(s *sc) { s.NoSubInt = true }},
		{[]string{"-j"}, func(s *sc) { s.NoJumbo = true }},
		{[]string{"-T"}, func(s *sc) { s.TraditionalMTU = true }},
		{[]string{"-v", "-D"}, func(s *sc) { s.Verbose, s.Debug = true, true }},
		{[]string{"-X"}, func(s *sc) { s.AllowRandom = true }},
		{[]string{"-B", "100000"}, func(s *sc) { s.MaxBandwidth = 100000 }},
		{[]string{"-r"}, func(s *sc) { s.LossRatio = true }},
		{[]string{"-m", "0x28"}, func(s *sc) { s.MaxDSCPECN = 0x28 }},
		{[]string{"-m", "010"}, func(s *sc) { s.MaxDSCPECN = 8 }},
		{[]string{"-a", "secret"}, func(s *sc) { s.Keys = &control.ServerKeys{Single: []byte("secret")} }},
		{[]string{"-n"}, func(s *sc) { s.NoSeqRollback = true }},
		{[]string{"-I", "100"}, func(s *sc) { s.MaxRateIndex = 100 }},
		{[]string{"-I", "@100"}, func(s *sc) { s.MaxRateIndex = 100 }},
		{[]string{"-t", "60"}, func(s *sc) { s.MaxTestTime = 60 }},
		{[]string{"-p", "25000"}, func(s *sc) { s.Port = 25000 }},
		{[]string{"-b", "0"}, func(s *sc) { s.SockBuf = 0 }},
		{[]string{"--no-gso"}, func(s *sc) {}},
		{[]string{"--max-connections", "10"}, func(s *sc) { s.MaxConnections = 10 }},
		// Service options: localOptions.Service, checked in TestServiceOptions.
		{[]string{"-x", "-l", "log", "-k", "10"}, func(s *sc) {}},
		{[]string{"-G", "stats.json"}, func(s *sc) {}},
		{[]string{"--log-format", "json", "--log-level", "warn", "--setup-rate", "0"}, func(s *sc) {}},
		{[]string{"--metrics-listen", "127.0.0.1:24602"}, func(s *sc) {}},
		{[]string{"--drain-timeout", "90s"}, func(s *sc) {}},
		{[]string{"--archive", "arc", "--store", "sqlite:x.db", "--archive-key", "k", "--archive-addresses", "plain",
			"--archive-max-size", "2", "--archive-max-age", "10m", "--archive-retention", "720h", "--archive-name", "n"}, func(s *sc) {}},
		{[]string{"--test-ports", "40000-40999", "--max-conns-per-source", "64", "--source-prefix6", "64"}, func(s *sc) {}},
		{[]string{"127.0.0.1"}, func(s *sc) { s.BindAddrs = []string{"127.0.0.1"} }},
		{[]string{"127.0.0.1:25000"}, func(s *sc) { s.BindAddrs, s.Port = []string{"127.0.0.1"}, 25000 }},
		{[]string{"-p", "1", "[::1]:25000"}, func(s *sc) { s.BindAddrs, s.Port = []string{"::1"}, 25000 }},
		{[]string{"::1"}, func(s *sc) { s.BindAddrs = []string{"::1"} }},
		{[]string{"127.0.0.1", "::1", "-p", "25000"}, func(s *sc) { s.BindAddrs, s.Port = []string{"127.0.0.1", "::1"}, 25000 }},
	}
	used := map[string]bool{}
	for _, tt := range tests {
		got, _ := mustServer(t, tt.args...)
		want := control.DefaultServerConfig()
		tt.set(&want)
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("server %q:\n got %+v\nwant %+v", tt.args, *got, want)
		}
		markUsed(used, tt.args)
	}
	if _, lo := mustServer(t, "--no-gso"); !lo.NoGSO {
		t.Error("--no-gso did not set localOptions.NoGSO")
	}
	for _, o := range options {
		if o.role&forServer != 0 && o.unsupported&forServer == 0 && o.name != "key-file" && o.name != "show-rates" && !used[o.name] {
			t.Errorf("server option %s is not exercised", &o)
		}
	}
}

// markUsed records which options args name, by letter or long name.
func markUsed(used map[string]bool, args []string) {
	for _, a := range args {
		for _, o := range options {
			if a == "--"+o.name || o.letter != "" && a == "-"+o.letter {
				used[o.name] = true
			}
		}
	}
}

// base returns a command line for role that passes every check, to which
// one option is added.
func base(r role) []string {
	if r == forServer {
		return []string{"server"}
	}
	return []string{"client", "-d", "h"}
}

// TestRangeErrors checks the limits of every numeric option in each role
// that takes it: the message is OB-UDPST's with the option named.
func TestRangeErrors(t *testing.T) {
	for _, o := range options {
		if o.kind != decimal && o.kind != cInteger {
			continue
		}
		for _, r := range []role{forClient, forServer} {
			if o.role&r == 0 {
				continue
			}
			lo, hi := o.limits(r)
			for _, v := range []int{lo - 1, hi + 1} {
				args := append(base(r), "--"+o.name, strconv.Itoa(v))
				mustFail(t, exitConfig, args,
					fmt.Sprintf("ERROR: Parameter %d out-of-range for %s (%d-%d)", v, &o, lo, hi))
			}
			flag := "-" + o.letter
			if o.letter == "" {
				flag = "--" + o.name
			}
			mustFail(t, exitConfig, append(base(r), flag, "5x"),
				fmt.Sprintf("ERROR: '5x' is not a valid number for %s", &o))
			mustFail(t, exitConfig, append(base(r), flag, ""), "'' is not a valid number", o.String())
			mustFail(t, exitConfig, append(base(r), flag, "99999999999999999999"), "out-of-range for "+o.String())
		}
	}
	mustFail(t, exitConfig, []string{"client", "-d", "h", "-t", "3601"},
		"ERROR: Parameter 3601 out-of-range for --test-time/-t (5-3600)")

	// Options whose value has a syntax of its own.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-C", "0"}, "Parameter 0 out-of-range for --connections/-C (1-24)"},
		{[]string{"-C", "25"}, "Parameter 25 out-of-range for --connections/-C (1-24)"},
		{[]string{"-C", "1-25"}, "Parameter 25 out-of-range for --connections/-C maximum (1-24)"},
		{[]string{"-C", "x"}, "'x' is not a valid number for --connections/-C"},
		{[]string{"-i", "0"}, "Parameter 0 out-of-range for --bimodal/-i (1-36000)"},
		{[]string{"-i", "-36001"}, "Parameter 36001 out-of-range for --bimodal/-i (1-36000)"},
		{[]string{"-i", "--3"}, "Parameter -3 out-of-range for --bimodal/-i"},
		{[]string{"-I", "1153"}, "Parameter 1153 out-of-range for --rate-index/-I (0-1152)"},
		{[]string{"-I", "@1153"}, "Parameter 1153 out-of-range for --rate-index/-I (0-1152)"},
		{[]string{"-I", "@x"}, "'x' is not a valid number for --rate-index/-I"},
		{[]string{"-m", "0x2g"}, "'0x2g' is not a valid number for --dscp-ecn/-m"},
		{[]string{"-m", "08"}, "'08' is not a valid number for --dscp-ecn/-m"},
		{[]string{"-m", "0b1"}, "'0b1' is not a valid number for --dscp-ecn/-m"},
		{[]string{"-m", "0o7"}, "'0o7' is not a valid number for --dscp-ecn/-m"},
		{[]string{"-m", "1_0"}, "'1_0' is not a valid number for --dscp-ecn/-m"},
		{[]string{"-m", "0x100"}, "Parameter 256 out-of-range for --dscp-ecn/-m (0-255)"},
		{[]string{"-m", "-1"}, "Parameter -1 out-of-range for --dscp-ecn/-m (0-255)"},
		{[]string{"h:0"}, "Parameter 0 out-of-range for the port of 'h:0' (1-65535)"},
		{[]string{"[::1]:65536"}, "Parameter 65536 out-of-range for the port of '[::1]:65536' (1-65535)"},
		{[]string{"h:"}, "'' is not a valid number for the port of 'h:'"},
	} {
		mustFail(t, exitConfig, append(base(forClient), tt.args...), tt.want)
	}
	mustFail(t, exitConfig, []string{"server", "-I", "1153"}, "Parameter 1153 out-of-range for --rate-index/-I (0-1152)")
	mustFail(t, exitConfig, []string{"server", "-B", "100001"}, "Parameter 100001 out-of-range for --bandwidth/-B (0-100000)")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "-B", "32768"}, "Parameter 32768 out-of-range for --bandwidth/-B (0-32767)")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "--protocol", "7"}, "Parameter 7 out-of-range for --protocol (8-20)")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "--protocol", "21"}, "Parameter 21 out-of-range for --protocol (8-20)")
}

// TestCrossChecks covers every check of OB-UDPST 9.0.0's options that involves
// more than one value, and the other validation messages.
func TestCrossChecks(t *testing.T) {
	many := []string{"client", "-d"}
	for i := 0; i < 25; i++ {
		many = append(many, fmt.Sprintf("h%d", i))
	}
	long := strings.Repeat("k", control.MaxKeyLen+1)
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"client", "-d", "h", "-t", "5", "-P", "6000"},
			[]string{"ERROR: Sub-interval period is greater than test interval time", "--sub-interval/-P 6000", "--test-time/-t 5"}},
		{[]string{"client", "-d", "h", "-P", "100", "-F", "60"},
			[]string{"ERROR: Sub-interval period must be at least 2x status feedback/trial interval", "--sub-interval/-P 100", "--trial-interval/-F 60"}},
		{[]string{"client", "-d", "h", "-F", "60"},
			[]string{"ERROR: Sub-interval period must be a multiple of status feedback/trial interval", "--sub-interval/-P 1000", "--trial-interval/-F 60"}},
		{[]string{"client", "-d", "h", "-L", "100"},
			[]string{"ERROR: Low delay variation threshold > upper delay variation threshold", "--low-threshold/-L 100", "--upper-threshold/-U 90"}},
		{[]string{"client", "-d", "h", "-i", "10"},
			[]string{"ERROR: Bimodal count must be less than total sub-intervals", "--bimodal/-i 10"}},
		{[]string{"client", "-d", "h", "-i", "-50", "-t", "5", "-P", "100"},
			[]string{"ERROR: Bimodal count must be less than total sub-intervals", "--bimodal/-i 50", "50 Sub-Intervals"}},
		{[]string{"client", "-d", "h", "-Z", "10"},
			[]string{"ERROR: Packet marking octet must set ECN bits to ECT(0)/Classic [10] or ECT(1)/L4S [01]", "--ecn-ce-threshold/-Z", "--dscp-ecn/-m"}},
		{[]string{"client", "-d", "h", "-Z", "10", "-m", "0x03"},
			[]string{"ERROR: Packet marking octet must set ECN bits", "0x03"}},
		{[]string{"client", "-d", "h", "-a", "k", "-K", "f"},
			[]string{"ERROR: Authentication key and key file are mutually exclusive", "--auth-key/-a", "--key-file/-K"}},
		{[]string{"client", "-d", "h", "-y", "3"},
			[]string{"ERROR: Authentication key ID requires authentication key or key file", "--key-id/-y"}},
		{[]string{"client", "-d", "h", "-y", "0"},
			[]string{"ERROR: Authentication key ID requires authentication key or key file", "--key-id/-y"}},
		{[]string{"client", "-d", "h", "-D"},
			[]string{"ERROR: Debug only available when used with verbose", "--debug/-D", "--verbose/-v"}},
		{[]string{"server", "-D"},
			[]string{"ERROR: Debug only available when used with verbose", "--debug/-D"}},
		{[]string{"client", "-d", "h", "-v", "-f", "json"},
			[]string{"ERROR: Verbose not available with JSON output format option", "--verbose/-v", "--format/-f"}},
		{[]string{"client", "-d", "h", "-C", "3-2"},
			[]string{"ERROR: Minimum connection count > maximum connection count", "--connections/-C 3-2"}},
		{[]string{"client", "-d", "h1", "h2", "-C", "1-1"},
			[]string{"ERROR: Maximum multi-connection count must be >= server count", "--connections/-C"}},
		{[]string{"client", "-d", "h", "--protocol", "10", "-a", "k"},
			[]string{"ERROR: Authentication is not available with --protocol 10"}},
		{[]string{"client", "-d", "h", "--protocol", "11", "-m", "2", "-Z", "5"},
			[]string{"ERROR: --ecn-ce-threshold/-Z is not available with --protocol 11"}},
		{[]string{"client", "-d", "h", "--protocol", "19", "-i", "-2"},
			[]string{"ERROR: --bimodal/-i with a negative count is not available with --protocol 19"}},
		{[]string{"client", "-d", "h", "--protocol", "8", "-P", "500"},
			[]string{"ERROR: --sub-interval/-P must be whole seconds with --protocol 8 (500 ms)"}},
		{[]string{"client", "-d", "h", "--protocol", "9", "-C", "2"},
			[]string{"ERROR: --protocol 9 has one Test Connection per server (--connections/-C 2)"}},
		{[]string{"client", "-d", "h", "-M"},
			[]string{"ERROR: Maximum from local interface requires local interface option", "--interface-max/-M", "--interface/-E"}},
		{[]string{"client", "h"},
			[]string{"ERROR: Test direction required when client", "--upstream/-u", "--downstream/-d", "--bidirectional"}},
		{[]string{"client", "-d"},
			[]string{"ERROR: Server hostname or IP address required when client"}},
		{many, []string{"ERROR: Server count exceeds maximum (24)"}},
		{[]string{"client", "-d", "[::1]"},
			[]string{"ERROR: Invalid format for IPv6 address with port number", "'[::1]'"}},
		{[]string{"client", "-d", "[::1]25000"},
			[]string{"ERROR: Invalid format for IPv6 address with port number"}},
		{[]string{"client", "-d", ":25000"},
			[]string{"ERROR: Missing host name or address in ':25000'"}},
		{[]string{"client", "-d", "-4", "-6", "h"},
			[]string{"--ipv4/-4 and --ipv6/-6 are mutually exclusive"}},
		{[]string{"server", "-46"},
			[]string{"--ipv4/-4 and --ipv6/-6 are mutually exclusive"}},
		{[]string{"client", "-u", "h", "-O", "meta.csv"},
			[]string{"ERROR: Client output file only valid for downstream testing", "--export/-O"}},
		{[]string{"client", "-d", "h", "-f", "xml"},
			[]string{"ERROR: 'xml' is not a valid output format", "--format/-f"}},
		{[]string{"client", "-d", "h", "-A", "D"},
			[]string{"ERROR: 'D' is not a valid rate adjustment algorithm", "--algorithm/-A"}},
		{[]string{"client", "-d", "h", "-a", ""},
			[]string{"ERROR: Authentication key is empty", "--auth-key/-a"}},
		{[]string{"client", "-d", "h", "-a", long},
			[]string{"ERROR: Authentication key exceeds 64 characters", "--auth-key/-a"}},
		{[]string{"server", "-a", long},
			[]string{"ERROR: Authentication key exceeds 64 characters", "--auth-key/-a"}},
		{[]string{"client", "-d", "h", "--output", ""},
			[]string{"ERROR: --output needs a file name"}},
		{[]string{"server", "-l", "log"},
			[]string{"ERROR: Log file only supported when executing as daemon", "--log-file/-l", "--daemon/-x"}},
		{[]string{"server", "127.0.0.1:25000", "::1"},
			[]string{"ERROR: Bind addresses must share one control port"}},
	} {
		mustFail(t, exitConfig, tt.args, tt.want...)
	}
	// Within the limits, every check passes.
	mustClient(t, "-d", "h", "-t", "10", "-P", "5000", "-F", "250", "-L", "90", "-U", "90", "-i", "-1")
	mustClient(t, "-d", "h", "-P", "100", "-F", "50", "-t", "5", "-i", "49")
	mustClient(t, "-d", "[::1]:25000", "-C", "1-1")
}

// TestRoleMismatch gives every option of one role to the other: each is
// refused with OB-UDPST's message (ours where it has none) and our name.
func TestRoleMismatch(t *testing.T) {
	for _, o := range options {
		var args []string
		switch o.role {
		case forClient:
			args = []string{"server", "-" + o.letter}
		case forServer:
			args = []string{"client", "-d", "h", "-" + o.letter}
		default:
			continue
		}
		if o.letter == "" {
			args[len(args)-1] = "--" + o.name
		}
		if o.kind != switchOpt {
			args = append(args, "1")
		}
		if o.wrongRole == "" || !strings.HasPrefix(o.wrongRole, "ERROR: ") {
			t.Errorf("%s: wrong-role message %q should start with ERROR:", &o, o.wrongRole)
		}
		mustFail(t, exitConfig, args, o.wrongRole+" ("+o.String()+")")
	}
	mustFail(t, exitConfig, []string{"server", "-P", "100"}, "ERROR: Sub-interval period only set by client (--sub-interval/-P)")
	mustFail(t, exitConfig, []string{"server", "-h", "20"}, "ERROR: High-speed delta only set by client (--high-speed-delta/-h)")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "-G", "stats.json"},
		"ERROR: Performance statistics file only valid when server (--stats-file/-G)")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "-x"}, "ERROR: Execution as daemon only valid when server")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "-1"}, "ERROR: One test execution only valid when server")
}

// TestClientUXErrors: the refusals of -O, -E, --json-stream and --progress.
func TestClientUXErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-O", "+"}, "ERROR: --export/-O needs a file name"},
		{[]string{"-E", "a/b"}, "ERROR: 'a/b' is not a valid interface name (--interface/-E)"},
		{[]string{"-E", "sixteen-chars-xx"}, "not a valid interface name"},
		{[]string{"-M"}, "ERROR: Maximum from local interface requires local interface option"},
		{[]string{"--json-stream", "-f", "jsonf"}, "ERROR: --json-stream writes one object per line: not with --format/-f jsonf"},
		{[]string{"--json-stream", "-v"}, "ERROR: Verbose not available with JSON output format option"},
		{[]string{"--progress", "sometimes"}, "ERROR: 'sometimes' is not a valid progress setting (--progress: auto, always or never)"},
	} {
		mustFail(t, exitConfig, append([]string{"client", "-d", "h"}, tt.args...), tt.want)
	}
	mustFail(t, exitConfig, []string{"client", "-u", "h", "-O", "x.csv"}, "ERROR: Client output file only valid for downstream testing")
	mustFail(t, exitConfig, []string{"server", "--json-stream"}, "ERROR: JSON stream only valid when client")
}

// TestProgressChoice: auto draws only on a terminal, for text without -s
// or a stream; always and never are what they say.
func TestProgressChoice(t *testing.T) {
	text := &control.ClientConfig{}
	js := &control.ClientConfig{Format: "json"}
	quiet := &control.ClientConfig{Reporting: control.Reporting{NoSubInt: true}}
	for _, c := range []struct {
		cfg  *control.ClientConfig
		lo   localOptions
		tty  bool
		want bool
	}{
		{text, localOptions{}, true, true},
		{text, localOptions{Progress: progressAuto}, true, true},
		{text, localOptions{}, false, false},
		{js, localOptions{}, true, false},
		{quiet, localOptions{}, true, false},
		{text, localOptions{Stream: true}, true, false},
		{js, localOptions{Progress: progressAlways}, false, true},
		{text, localOptions{Progress: progressNever}, true, false},
	} {
		if got := wantProgress(c.cfg, c.lo, c.tty); got != c.want {
			t.Errorf("%+v %+v terminal %v: %v", c.cfg, c.lo, c.tty, got)
		}
	}
}

// TestUnsupported: options whose work is not done yet are refused with one
// line, never ignored.
func TestUnsupported(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "-O", "meta.csv"}, "--export/-O is not supported yet"},
		{[]string{"server", "-O", "+meta.csv"}, "--export/-O is not supported yet"},
	} {
		mustFail(t, exitConfig, tt.args, tt.want)
	}
	// Validation still comes first.
	mustFail(t, exitConfig, []string{"server", "-k", "5"}, "Parameter 5 out-of-range for --log-size/-k (10-1000000)")
}

// TestPermutation: options may come anywhere, bundled or glued, as getopt
// allows.
func TestPermutation(t *testing.T) {
	c, _ := mustClient(t, "-d", "127.0.0.1", "-t", "5")
	if c.TestIntTime != 5 || c.Servers[0].Host != "127.0.0.1" {
		t.Errorf("client -d 127.0.0.1 -t 5: %+v", c)
	}
	c, _ = mustClient(t, "127.0.0.1", "-d", "-i", "-3")
	if c.Bimodal != 3 || !c.Suppress || c.Upstream || c.Servers[0].Host != "127.0.0.1" {
		t.Errorf("client 127.0.0.1 -d -i -3: %+v", c)
	}
	s, _ := mustServer(t, "-v", "127.0.0.1", "-p", "25000")
	if !s.Verbose || s.Port != 25000 || !reflect.DeepEqual(s.BindAddrs, []string{"127.0.0.1"}) {
		t.Errorf("server -v 127.0.0.1 -p 25000: %+v", s)
	}
	for _, form := range [][]string{
		{"-t5"}, {"-t", "5"}, {"-t=5"}, {"--test-time=5"}, {"--test-time", "5"}, {"-test-time", "5"}, {"-test-time=5"},
		{"-vt5"}, {"-vt", "5"}, {"--t", "5"},
	} {
		c, _ := mustClient(t, append([]string{"h", "-d"}, form...)...)
		if c.TestIntTime != 5 {
			t.Errorf("client h -d %q: test time %d, want 5", form, c.TestIntTime)
		}
	}
	c, _ = mustClient(t, "-di-3", "h")
	if !c.Suppress || c.Bimodal != 3 {
		t.Errorf("client -di-3 h: %+v", c)
	}
	c, _ = mustClient(t, "-vsed", "h")
	if !c.Verbose || !c.NoSubInt || !c.ShowErrors {
		t.Errorf("client -vsed h: %+v", c)
	}
	// A value is taken whole, even when it looks like an option.
	c, _ = mustClient(t, "h", "-a", "-d", "-u")
	if string(c.Key) != "-d" || !c.Upstream {
		t.Errorf("client h -a -d -u: key %q, upstream %v", c.Key, c.Upstream)
	}
	c, _ = mustClient(t, "-d", "--", "h")
	if c.Servers[0].Host != "h" {
		t.Errorf("client -d -- h: %+v", c.Servers)
	}
	mustFail(t, exitConfig, []string{"client", "-d", "h", "--", "-t"}, "ERROR: Unexpected argument '-t'")
	mustFail(t, exitConfig, []string{"client", "-d", "--", "-h"}, "ERROR: Unexpected argument '-h'")
	mustFail(t, exitConfig, []string{"server", "--", "-"}, "ERROR: Unexpected argument '-'")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "-t"}, "ERROR: Option --test-time/-t needs a value")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "--test-time"}, "ERROR: Option --test-time/-t needs a value")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "-vt"}, "ERROR: Option --test-time/-t needs a value")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "-Q"}, "ERROR: Unknown option -Q (")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "-dQ"}, "ERROR: Unknown option -Q (")
	// A long option is echoed as typed, with the nearest one if any.
	mustFail(t, exitConfig, []string{"client", "-d", "h", "--bogus"}, "ERROR: Unknown option --bogus (udpstp client --help")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "--bandwith=5"}, "ERROR: Unknown option --bandwith: did you mean --bandwidth? (")
	mustFail(t, exitConfig, []string{"server", "--verbos"}, "ERROR: Unknown option --verbos: did you mean --verbose? (udpstp server --help")
	// getopt gives -t the next argument, which leaves no server (or no
	// direction): the option is named as missing its value, not the server.
	mustFail(t, exitConfig, []string{"client", "-d", "-t", "h"}, "ERROR: Option --test-time/-t needs a value ('h' was read as its value)")
	mustFail(t, exitConfig, []string{"client", "-t", "-d", "h"}, "ERROR: Option --test-time/-t needs a value ('-d' was read as its value)")
	mustFail(t, exitConfig, []string{"client", "-d", "-t", "10"}, "ERROR: Server hostname or IP address required when client")
	mustFail(t, exitConfig, []string{"client", "-d", "h", "-t", "5", "--test-time", "6"}, "Cannot use two forms")

	got := permute([]string{"h", "-vt5", "x", "-i", "-3", "--", "-y", "z"}, flagsFor(forClient)).tokens()
	want := []string{"-v", "-t", "5", "-i", "-3", "--", "h", "x", "-y", "z"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("permute: got %q, want %q", got, want)
	}
}

// -h is OB-UDPST's high-speed delta, never help, whatever its value.
func TestHighSpeedDeltaIsNotHelp(t *testing.T) {
	for _, v := range []string{"20", "1", "255"} {
		c, _ := mustClient(t, "-d", "h", "-h", v)
		if strconv.Itoa(c.HighSpeedDelta) != v {
			t.Errorf("-h %s: high-speed delta %d", v, c.HighSpeedDelta)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, cmd := range []string{"client", "server"} {
		r := run(t, cmd, "--help")
		if r.code != 0 || !strings.Contains(r.out, "USAGE:") || r.client != nil || r.server != nil {
			t.Errorf("%s --help: exit %d, output %q", cmd, r.code, r.out)
		}
		// -? prints the same help and exits 50, like udpst -?.
		q := run(t, cmd, "-v", "-?")
		if q.code != exitConfig || q.msg != "" || q.out != r.out {
			t.Errorf("%s -?: exit %d %q, want the help and exit %d", cmd, q.code, q.msg, exitConfig)
		}
		if h := run(t, "help", cmd); h.code != 0 || h.out != r.out {
			t.Errorf("help %s differs from %s --help", cmd, cmd)
		}
	}
	r := run(t, "client", "--help")
	for _, want := range []string{"--high-speed-delta delta, -h delta", "--test-time seconds, -t seconds", "--output FILE", "--help"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("client --help lacks %q", want)
		}
	}
	if strings.Contains(r.out, "--daemon") || strings.Contains(r.out, "-h, --help") {
		t.Error("client --help shows a server option or -h as help")
	}
	s := run(t, "server", "--help")
	if strings.Contains(s.out, "--sub-interval") || !strings.Contains(s.out, "longest test granted") {
		t.Error("server --help shows client options or the client's meaning of -t")
	}
}

// writeFile writes a temporary file and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "udpst.keys")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKeyFile(t *testing.T) {
	keys := writeFile(t, "# test keys\n1,firstkey\n5,fifthkey # comment\n")
	c, _ := mustClient(t, "-d", "h", "-K", keys, "-y", "5")
	if string(c.Key) != "fifthkey" || c.KeyID != 5 {
		t.Errorf("-K -y 5: key %q id %d", c.Key, c.KeyID)
	}
	one := writeFile(t, "7,onlykey\n")
	c, _ = mustClient(t, "-d", "h", "-K", one)
	if string(c.Key) != "onlykey" || c.KeyID != 7 {
		t.Errorf("-K with one entry: key %q id %d", c.Key, c.KeyID)
	}
	s, _ := mustServer(t, "-K", keys, "-a", "single")
	if s.Keys == nil || s.Keys.File.Len() != 2 || string(s.Keys.Single) != "single" {
		t.Errorf("server -K -a: keys %+v", s.Keys)
	}

	mustFail(t, exitKeyFile, []string{"client", "-d", "h", "-K", keys}, "ERROR: Authentication key ID (0) not found in key file")
	mustFail(t, exitKeyFile, []string{"client", "-d", "h", "-K", keys, "-y", "2"}, "ERROR: Authentication key ID (2) not found in key file")
	bad := writeFile(t, "1,firstkey\n1,again\n")
	mustFail(t, exitKeyFile, []string{"client", "-d", "h", "-K", bad, "-y", "1"}, "ERROR: ", "line 2", "duplicate key ID 1")
	mustFail(t, exitKeyFile, []string{"server", "-K", bad}, "line 2")
	mustFail(t, exitKeyFile, []string{"server", "-K", writeFile(t, "# none\n")}, "no key entries")
	missing := filepath.Join(t.TempDir(), "absent.keys")
	mustFail(t, exitKeyFile, []string{"client", "-d", "h", "-K", missing}, "ERROR: ", "absent.keys")
}

func TestShowRates(t *testing.T) {
	for _, tt := range []struct {
		args []string
		o    dataphase.TableOptions
		ipv6 bool
	}{
		{[]string{"server", "-S"}, dataphase.TableOptions{}, false},
		{[]string{"server", "-S", "-j"}, dataphase.TableOptions{NoJumbo: true}, false},
		{[]string{"client", "-d", "h", "-S", "-T", "-6"}, dataphase.TableOptions{TraditionalMTU: true}, true},
		// Neither a direction nor a server, as udpst -S needs neither.
		{[]string{"client", "-S"}, dataphase.TableOptions{}, false},
		{[]string{"client", "-S", "-j", "-6"}, dataphase.TableOptions{NoJumbo: true}, true},
	} {
		r := run(t, tt.args...)
		var want bytes.Buffer
		if err := writeRateTable(&want, tt.o, tt.ipv6); err != nil {
			t.Fatal(err)
		}
		if r.code != 0 || r.client != nil || r.server != nil || r.out != want.String() {
			t.Errorf("%q: exit %d, ran %v, table printed %v", tt.args, r.code, r.client != nil || r.server != nil, r.out == want.String())
		}
	}
}

// The client's ErrorStatus is the exit status, with no message of ours.
func TestClientExitStatus(t *testing.T) {
	app := newAppWith(runners{client: func(context.Context, *control.ClientConfig, localOptions) int { return 3 }})
	app.Writer, app.ErrWriter = io.Discard, io.Discard
	err := app.Run([]string{"udpstp", "client", "-d", "h"})
	if exitCode(err) != 3 || err.Error() != "" {
		t.Errorf("err = %v, want exit 3 without message", err)
	}
}

func TestServerError(t *testing.T) {
	app := newAppWith(runners{server: func(context.Context, *control.ServerConfig, localOptions) error { return cli.Exit("bind failed", 75) }})
	err := app.Run([]string{"udpstp", "server"})
	if exitCode(err) != 75 {
		t.Errorf("err = %v, want exit 75", err)
	}
}

// `udpstp version`, --version and -V print the same block: the version,
// the commit, the Go toolchain and the protocol versions.
func TestVersion(t *testing.T) {
	var first string
	for _, args := range [][]string{{"version"}, {"--version"}, {"-V"}} {
		r := run(t, args...)
		for _, want := range []string{"udpstp " + buildinfo.Get().Version + "\n", "\nCommit: ", "\nGo: go1.", "Protocol version: 20", "11-20"} {
			if r.code != 0 || !strings.Contains(r.out, want) {
				t.Errorf("%q: exit %d, output %q lacks %q", args, r.code, r.out, want)
			}
		}
		if first == "" {
			first = r.out
		} else if r.out != first {
			t.Errorf("%q prints %q, version prints %q", args, r.out, first)
		}
	}
	if buildinfo.Get().Version == "" {
		t.Error("the version is empty")
	}
	mustFail(t, exitConfig, []string{"version", "x"}, `"x"`)
	// -V is the app's, never an option of the test commands: udpst has no
	// -V, so a client given one is refused like any unknown option.
	for i := range options {
		if options[i].letter == "V" {
			t.Errorf("%s takes -V, which is the version flag", &options[i])
		}
	}
	mustFail(t, exitConfig, []string{"client", "-d", "-V", "h"}, "-V")
}

// TestOptionTable: the table covers OB-UDPST's getopt string exactly, each
// letter taking a value where udpst's does, and names do not collide.
func TestOptionTable(t *testing.T) {
	const getopt = "ud46C:x1evsf:jTDXSO:B:ri:oRa:y:K:m:G:nI:t:P:p:A:b:L:U:F:c:h:q:E:Ml:k:Z:"
	byLetter := map[string]*option{}
	names := map[string]bool{}
	for i := range options {
		o := &options[i]
		for _, n := range []string{o.name, o.letter} {
			if n != "" && names[n] {
				t.Errorf("name %q used twice", n)
			}
			names[n] = true
		}
		if o.letter != "" {
			byLetter[o.letter] = o
		}
		if o.usage == "" || o.role == 0 {
			t.Errorf("%s: no usage or role", o)
		}
		if o.role != forBoth && o.wrongRole == "" {
			t.Errorf("%s: single-role option without a wrong-role message", o)
		}
	}
	seen := 0
	for i := 0; i < len(getopt); i++ {
		l := string(getopt[i])
		value := i+1 < len(getopt) && getopt[i+1] == ':'
		if value {
			i++
		}
		o, ok := byLetter[l]
		switch {
		case !ok:
			t.Errorf("udpst option -%s missing", l)
		case (o.kind != switchOpt) != value:
			t.Errorf("%s: takes a value %v, udpst's %v", o, o.kind != switchOpt, value)
		}
		seen++
	}
	if seen != len(byLetter) {
		t.Errorf("%d letters in the table, %d in udpst's getopt string", len(byLetter), seen)
	}
}

// Help is --help, but where -h means nothing else (the app, rates,
// version) it still shows help rather than a parse error.
func TestDashHOutsideClient(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"rates", "-h"}, {"version", "-h"}} {
		if r := run(t, args...); r.code != 0 || !strings.Contains(r.out, "USAGE:") {
			t.Errorf("%q: exit %d %q, want help", args, r.code, r.msg)
		}
	}
}

// TestConnectionCounts: -C and the server list give OB-UDPST's minimum and
// maximum connection counts (report's package doc: several Test
// Connections and their active count).
func TestConnectionCounts(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		min, max int
	}{
		{[]string{"-d", "h"}, 1, 1},
		{[]string{"-d", "h", "-C", "3"}, 3, 3},
		{[]string{"-d", "h", "-C", "2-4"}, 2, 4},
		{[]string{"-d", "h1", "h2"}, 2, 2},
		{[]string{"-d", "h1", "h2", "-C", "1"}, 1, 2},
		{[]string{"-d", "h1", "h2", "h3", "-C", "2-6"}, 2, 6},
	} {
		r := run(t, append([]string{"client"}, tt.args...)...)
		if r.client == nil {
			t.Fatalf("%v: %s", tt.args, r.msg)
		}
		if r.client.ConnMin != tt.min || r.client.ConnMax != tt.max {
			t.Errorf("%v: connections %d-%d, want %d-%d", tt.args, r.client.ConnMin, r.client.ConnMax, tt.min, tt.max)
		}
	}
}
