package main

// `udpstp client`: OB-UDPST's `udpst -u|-d [option]... server[:port]...`.
// Checks run in OB-UDPST's order (direction, servers, options in getopt
// order, then the cross-checks) with its messages, so a command line that
// udpst refuses is refused here with the same words; ours add the option's
// name, since our long names differ from udpst's letters.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/discover"
	"github.com/udpstp/udpstp/report"
)

// clientCommand is `udpstp client`, which runs its test with run.
func clientCommand(run func(context.Context, *control.ClientConfig, localOptions) int) *cli.Command {
	return getoptCommand(&cli.Command{
		Name:      "client",
		Usage:     "run a capacity test against a server, like `udpst -u|-d`",
		UsageText: "udpstp client -u|-d|--bidirectional [options] server[:port]...",
		Description: "Measures upstream (-u) or downstream (-d) IP capacity to a server running\n" +
			"udpstp or OB-UDPST, or both at once with the latency under load\n" +
			"(--bidirectional, or -u -d), once or --repeat N times with an aggregate.\n" +
			"Every option of OB-UDPST's udpst client is here under\n" +
			"its letter and a long name; options may come before or after the servers.\n" +
			"An IPv6 address with a port is written [addr]:port. -? prints this help\n" +
			"and exits 50, as udpst does; -h is the high-speed delta, help is --help.",
	}, func() []cli.Flag { return flagsFor(forClient) }, func(c *cli.Context) error { return clientAction(c, run) })
}

func clientAction(c *cli.Context, run func(context.Context, *control.ClientConfig, localOptions) int) error {
	v := optionValues{c, forClient}
	if v.on("show-rates") && !v.on("upstream") && !v.on("downstream") && !v.on("bidirectional") && c.Args().Len() == 0 {
		// udpst -S prints the table before it asks for a direction or a
		// server: only the options the table honours are read.
		fam, err := family(v)
		if err != nil {
			return err
		}
		return showRates(c, v.on("no-jumbo"), v.on("traditional-mtu"), fam)
	}
	cfg, lo, err := clientConfig(v)
	if err != nil {
		return err
	}
	if v.on("show-rates") {
		return showRates(c, cfg.NoJumbo, cfg.TraditionalMTU, cfg.Family)
	}
	return startClient(c, cfg, lo, run)
}

// clientConfig builds the client's config from its command line.
func clientConfig(v optionValues) (*control.ClientConfig, localOptions, error) {
	var lo localOptions
	cfg := control.DefaultClientConfig()
	if err := checkRole(v.c, forClient); err != nil {
		return nil, lo, err
	}
	if err := clientTarget(v, &cfg); err != nil {
		return nil, lo, err
	}
	keyID, err := clientOptions(v, &cfg)
	if err != nil {
		return nil, lo, err
	}
	lo.NoGSO = v.on("no-gso")
	if err := clientUXOptions(v, &cfg, &lo); err != nil {
		return nil, lo, err
	}
	if err := checkClient(v, &cfg, keyID); err != nil {
		return nil, lo, err
	}
	if lo.Plan, err = clientPlan(v, &cfg); err != nil {
		return nil, lo, err
	}
	if err := checkUnsupported(v.c, forClient); err != nil {
		return nil, lo, err
	}
	if err := clientKey(v, &cfg, keyID); err != nil {
		return nil, lo, err
	}
	return &cfg, lo, nil
}

// clientTarget reads the direction, the servers and -C, which OB-UDPST
// settles before the other options.
func clientTarget(v optionValues, cfg *control.ClientConfig) error {
	// -u with -d is a bidirectional test (plan.go), which udpst refuses
	// ("mutually exclusive").
	up, down := v.on("upstream"), v.on("downstream")
	if !up && !down && !v.on("bidirectional") {
		if err := tookNext(v); err != nil {
			return err
		}
		return configError("ERROR: Test direction required when client (%s or %s, or %s)", opt("upstream"), opt("downstream"), opt("bidirectional"))
	}
	cfg.Upstream = up && !bidirectional(v)

	port := control.DefaultControlPort
	if err := v.number("port", &port); err != nil {
		return err
	}
	args := v.c.Args().Slice()
	if len(args) > control.MaxConnsPerClient {
		return configError("ERROR: Server count exceeds maximum (%d)", control.MaxConnsPerClient)
	}
	if len(args) == 0 {
		if err := tookNext(v); err != nil {
			return err
		}
		return configError("ERROR: Server hostname or IP address required when client")
	}
	for _, a := range args {
		if discover.Is(a) {
			// srv:NAME: servers found in the DNS, one used at a time
			// (client/failover.go), on -p's port unless an SRV record
			// names one.
			if len(args) > 1 {
				return configError("ERROR: %s must be the only server: its servers are tried one at a time, not tested together", a)
			}
			cfg.Servers = append(cfg.Servers, control.ServerAddr{Host: a, Port: port})
			continue
		}
		s, err := parseHostPort(a, port)
		if err != nil {
			return err
		}
		cfg.Servers = append(cfg.Servers, s)
	}

	if v.set("connections") {
		var err error
		cfg.ConnMin, cfg.ConnMax, err = parseConnections(v.text("connections"), len(cfg.Servers))
		if err != nil {
			return err
		}
	} else if n := len(cfg.Servers); n > 1 {
		cfg.ConnMin, cfg.ConnMax = n, n // OB-UDPST: one connection per server
	}
	return nil
}

// clientOptions reads the options that map one to one onto cfg, in
// OB-UDPST's getopt order, and returns the key ID (-1 when not given).
func clientOptions(v optionValues, cfg *control.ClientConfig) (keyID int, err error) {
	if cfg.Family, err = family(v); err != nil {
		return 0, err
	}
	cfg.ShowErrors = v.on("show-errors")
	cfg.Verbose = v.on("verbose")
	cfg.NoSubInt = v.on("summary-only")
	if v.set("format") {
		// report's names; text is the default, not a value of -f.
		if f, err := report.ParseFormat(v.text("format")); err != nil || !f.IsJSON() {
			return 0, configError("ERROR: '%s' is not a valid output format (%s: json, jsonb or jsonf)", v.text("format"), opt("format"))
		}
		cfg.Format = strings.ToLower(v.text("format"))
	}
	cfg.NoJumbo = v.on("no-jumbo")
	cfg.TraditionalMTU = v.on("traditional-mtu")
	cfg.Debug = v.on("debug")
	cfg.RandomPayload = v.on("random-payload")
	if v.set("export") && cfg.Upstream {
		return 0, configError("ERROR: Client output file only valid for downstream testing (%s)", opt("export"))
	}
	if err := v.number("bandwidth", &cfg.MaxBandwidth); err != nil {
		return 0, err
	}
	cfg.LossRatio = v.on("loss-ratio")
	if v.set("bimodal") {
		if cfg.Bimodal, cfg.Suppress, err = parseBimodal(v.text("bimodal")); err != nil {
			return 0, err
		}
	}
	cfg.UseOwDelVar = v.on("one-way-delay")
	if err := v.number("dscp-ecn", &cfg.DSCPECN); err != nil {
		return 0, err
	}
	cfg.IncludeOooDup = v.on("include-ooo-dup")
	if err := checkAuthKey(v); err != nil {
		return 0, err
	}
	keyID = -1
	if err := v.number("key-id", &keyID); err != nil {
		return 0, err
	}
	cfg.NoSeqRollback = v.on("no-seq-rollback")
	if v.set("rate-index") {
		idx, start, err := parseRateIndex(v.text("rate-index"))
		if err != nil {
			return 0, err
		}
		cfg.SRIndex, cfg.StartIndex = uint16(idx), start
	}
	if err := v.numbers([]numberField{
		{"test-time", &cfg.TestIntTime},
		{"sub-interval", &cfg.SubIntPeriod},
	}); err != nil {
		return 0, err
	}
	if v.set("algorithm") {
		switch a := v.text("algorithm"); {
		case strings.EqualFold(a, "B"):
			cfg.Algorithm = dataphase.AlgorithmB
		case strings.EqualFold(a, "C"):
			cfg.Algorithm = dataphase.AlgorithmC
		default:
			return 0, configError("ERROR: '%s' is not a valid rate adjustment algorithm (%s: B or C)", a, opt("algorithm"))
		}
	}
	if err := v.numbers([]numberField{
		{"socket-buffer", &cfg.SockBuf},
		{"low-threshold", &cfg.LowThresh},
		{"upper-threshold", &cfg.UpperThresh},
		{"trial-interval", &cfg.TrialInt},
		{"slow-adjust", &cfg.SlowAdjThresh},
		{"high-speed-delta", &cfg.HighSpeedDelta},
		{"seq-error-threshold", &cfg.SeqErrThresh},
		{"ecn-ce-threshold", &cfg.CEThresh},
		{"protocol", &cfg.Protocol},
	}); err != nil {
		return 0, err
	}
	if v.set("output") {
		if cfg.OutputFile = v.text("output"); cfg.OutputFile == "" {
			return 0, configError("ERROR: %s needs a file name", opt("output"))
		}
	}
	if cfg.TextFile, err = textfileOption(v); err != nil {
		return 0, err
	}
	return keyID, nil
}

// checkClient runs OB-UDPST's cross-checks, in its order, on the client's
// own values (before any server lowers them).
func checkClient(v optionValues, cfg *control.ClientConfig, keyID int) error {
	if err := checkDebug(v); err != nil {
		return err
	}
	period, trialInt, testTime := cfg.SubIntPeriod, cfg.TrialInt, cfg.TestIntTime
	sub, trial, tt := opt("sub-interval"), opt("trial-interval"), opt("test-time")
	switch {
	case cfg.Verbose && cfg.Format != "":
		return configError("ERROR: Verbose not available with JSON output format option (%s, %s)", opt("verbose"), opt("format"))
	case period > testTime*1000:
		return configError("ERROR: Sub-interval period is greater than test interval time (%s %d ms, %s %d s)", sub, period, tt, testTime)
	case period < 2*trialInt:
		return configError("ERROR: Sub-interval period must be at least 2x status feedback/trial interval (%s %d ms, %s %d ms)", sub, period, trial, trialInt)
	case period%trialInt != 0:
		return configError("ERROR: Sub-interval period must be a multiple of status feedback/trial interval (%s %d ms, %s %d ms)", sub, period, trial, trialInt)
	case cfg.LowThresh > cfg.UpperThresh:
		return configError("ERROR: Low delay variation threshold > upper delay variation threshold (%s %d ms, %s %d ms)",
			opt("low-threshold"), cfg.LowThresh, opt("upper-threshold"), cfg.UpperThresh)
	case cfg.Bimodal >= testTime*1000/period:
		return configError("ERROR: Bimodal count must be less than total sub-intervals (%s %d, %d Sub-Intervals from %s and %s)",
			opt("bimodal"), cfg.Bimodal, testTime*1000/period, tt, sub)
	case v.on("interface-max") && !v.set("interface"):
		return configError("ERROR: Maximum from local interface requires local interface option (%s needs %s)", opt("interface-max"), opt("interface"))
	case cfg.ConnMin > cfg.ConnMax:
		return configError("ERROR: Minimum connection count > maximum connection count (%s %d-%d)", opt("connections"), cfg.ConnMin, cfg.ConnMax)
	case v.set("auth-key") && v.set("key-file"):
		return configError("ERROR: Authentication key and key file are mutually exclusive (%s, %s)", opt("auth-key"), opt("key-file"))
	case keyID >= 0 && !v.set("auth-key") && !v.set("key-file"):
		return configError("ERROR: Authentication key ID requires authentication key or key file (%s needs %s or %s)",
			opt("key-id"), opt("auth-key"), opt("key-file"))
	case cfg.CEThresh != 0 && cfg.DSCPECN&3 != 1 && cfg.DSCPECN&3 != 2:
		return configError("ERROR: Packet marking octet must set ECN bits to ECT(0)/Classic [10] or ECT(1)/L4S [01] (%s needs %s with ECN bits 01 or 10, not 0x%02x)",
			opt("ecn-ce-threshold"), opt("dscp-ecn"), cfg.DSCPECN)
	}
	return checkProtocol(v, cfg)
}

// clientKey sets the key and key ID from -a or -K and -y. Key file
// problems, including a key ID the file lacks, exit 51 as in OB-UDPST.
func clientKey(v optionValues, cfg *control.ClientConfig, keyID int) error {
	file, err := loadKeyFile(v)
	if err != nil {
		return err
	}
	key, id, err := control.ClientKey(v.text("auth-key"), file, keyID, keyID >= 0)
	if err != nil {
		code := exitConfig
		if file != nil {
			code = exitKeyFile
		}
		return cli.Exit("ERROR: "+err.Error(), code)
	}
	cfg.Key, cfg.KeyID = key, id
	if len(key) > 0 && control.KeyBits(key) < control.MinKeyBits {
		// On standard error: the text on standard output stays OB-UDPST's.
		fmt.Fprintf(v.c.App.ErrWriter, "udpstp: WARNING: the authentication key (id %d) is %s\n", id, control.WeakKeyAdvice)
	}
	return nil
}

// parseConnections reads -C cnt[-max] as OB-UDPST does: without a maximum
// it is the larger of cnt and the number of servers, and it may not be
// below the number of servers (each server gets at least one connection).
func parseConnections(s string, servers int) (lo, hi int, err error) {
	o := opt("connections")
	minText, maxText, hasMax := strings.Cut(s, "-")
	if lo, err = parseDecimal(o.String(), minText, o.lo, o.hi); err != nil {
		return 0, 0, err
	}
	hi = max(lo, servers)
	if hasMax {
		if hi, err = parseDecimal(o.String()+" maximum", maxText, o.lo, o.hi); err != nil {
			return 0, 0, err
		}
	}
	if hi < servers {
		return 0, 0, configError("ERROR: Maximum multi-connection count must be >= server count (%s maximum %d, %d servers)", o, hi, servers)
	}
	return lo, hi, nil
}

// parseBimodal reads -i [-]count; the '-' prefix also suppresses rate
// adjustment during the first mode.
func parseBimodal(s string) (count int, suppress bool, err error) {
	o := opt("bimodal")
	digits, suppress := strings.CutPrefix(s, "-")
	count, err = parseDecimal(o.String(), digits, o.lo, o.hi)
	return count, suppress, err
}

// parseRateIndex reads -I [@]index; '@' makes the row a starting point
// instead of a fixed rate.
func parseRateIndex(s string) (index int, start bool, err error) {
	o := opt("rate-index")
	digits, start := strings.CutPrefix(s, "@")
	index, err = parseDecimal(o.String(), digits, o.lo, o.hi)
	return index, start, err
}

// parseHostPort reads a server argument as OB-UDPST does: host, a.b.c.d,
// host:port, [IPv6]:port, or a bare IPv6 address (two or more colons, no
// port). The port, if any, overrides port.
func parseHostPort(arg string, port int) (control.ServerAddr, error) {
	host, portText, hasPort := arg, "", false
	if rest, ok := strings.CutPrefix(arg, "["); ok {
		h, p, found := strings.Cut(rest, "]")
		if !found || !strings.HasPrefix(p, ":") {
			return control.ServerAddr{}, configError("ERROR: Invalid format for IPv6 address with port number ('%s'; use [addr]:port)", arg)
		}
		host, portText, hasPort = h, p[1:], true
	} else if strings.Count(arg, ":") == 1 {
		host, portText, _ = strings.Cut(arg, ":")
		hasPort = true
	}
	if host == "" {
		return control.ServerAddr{}, configError("ERROR: Missing host name or address in '%s'", arg)
	}
	if hasPort {
		var err error
		if port, err = parseDecimal("the port of '"+arg+"'", portText, 1, maxPort); err != nil {
			return control.ServerAddr{}, err
		}
	}
	return control.ServerAddr{Host: host, Port: port}, nil
}

// tookNext explains a missing direction or server that a numeric option
// took as its value, as getopt reads `-d -t h` (udpst then reports the
// missing server): the option is named as missing its value instead.
func tookNext(v optionValues) error {
	for i := range options {
		o := &options[i]
		if (o.kind != decimal && o.kind != cInteger) || o.role&v.role == 0 || !v.set(o.name) {
			continue
		}
		val := v.text(o.name)
		if _, err := strconv.ParseInt(val, 0, 64); err != nil {
			return configError("ERROR: Option %s needs a value ('%s' was read as its value)", o, val)
		}
	}
	return nil
}
