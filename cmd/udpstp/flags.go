package main

// The options of `udpstp server` and `udpstp client`. One table holds every
// option OB-UDPST 9.0.0's udpst accepts (`udpst -?`:
// testdata/obudpst/usage.txt),
// plus our own; the cli flags, the role checks, the argument permutation
// and the tests are all derived from it, so nothing is listed twice.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
)

// cliOnce sets urfave/cli's help and version flags, which it keeps in
// package variables that every App reads, once, before an App runs
// (newApp, parseClientArgs).
var cliOnce sync.Once

func setupCLI() {
	cliOnce.Do(func() {
		// cli's help flag has the alias -h, which is OB-UDPST's high-speed
		// delta. Worse, cli checks for help by reading every name of
		// HelpFlag as a bool, so a client's `-h 1` would print help
		// instead of running. Help is --help; where -h means nothing
		// else, usageError shows help for it anyway.
		cli.HelpFlag = &cli.BoolFlag{Name: "help", Usage: "show help", DisableDefaultText: true}

		// -V and --version print the version like `udpstp version`. -V
		// is free: OB-UDPST's udpst has no -V (its getopt string is
		// above), and its -v is our --verbose.
		cli.VersionFlag = &cli.BoolFlag{Name: "version", Aliases: []string{"V"},
			Usage: "print the version and exit", DisableDefaultText: true}
		cli.VersionPrinter = func(c *cli.Context) { writeVersion(c.App.Writer) }
	})
}

// role says which command takes an option.
type role uint8

const (
	forClient role = 1 << iota
	forServer
	forBoth = forClient | forServer
)

// kind says how an option's value is read.
type kind uint8

const (
	switchOpt kind = iota // no value
	decimal               // decimal integer in lo..hi (OB-UDPST's atoi, without its silent 0)
	cInteger              // C integer syntax: decimal, 0x hex, leading-0 octal (OB-UDPST's strtol)
	text                  // anything else; parsed by the command
)

// Help categories.
const (
	catTest    = "Test"
	catAlgo    = "Rate adjustment (client requests, the server may lower them)"
	catPackets = "Datagrams and sockets"
	catOutput  = "Output"
	catAuth    = "Authentication"
	catService = "Server operation"
)

// option is one command-line option: our long name, OB-UDPST's letter as
// its alias, and what OB-UDPST says when the other role is given it.
type option struct {
	name     string // long name
	letter   string // OB-UDPST's letter, our alias; "" for options udpst lacks
	role     role
	kind     kind
	lo, hi   int // limits of a decimal/cInteger value, or of its numeric part
	srvHi    int // server's upper limit where it differs (-B)
	category string
	// usage is the help line; a `word` in backquotes is the value's
	// placeholder. srvUsage replaces it for the server where the meaning
	// differs (the server's -t, -m, -I are maxima).
	usage, srvUsage string
	def, srvDef     string // default shown in help, "" for none
	// wrongRole is the one-line refusal when the other role is given the
	// option: OB-UDPST's message where it has one.
	wrongRole string
	// unsupported marks the roles for which an option's work is not done
	// yet; it is validated like the others, then refused with one line.
	unsupported role
	// values are the words a value may be, for shell completion
	// (completion.go); TestCompletionValuesAccepted holds them to what the
	// option's parser takes.
	values []string
}

// Limits not in control's constants.
const (
	maxBimodal = control.MaxTestIntTime * 1000 / control.MinSubIntPeriod // 36000
	maxKeyID   = 255
	maxPort    = 65535
	// maxArchiveSizeMB bounds --archive-max-size (1 TiB).
	maxArchiveSizeMB = 1 << 20
	maxCEThresh      = 255
	maxSlowAdj       = 65535
	maxHSDelta       = 255
	maxSeqErr        = 65535
	minLogSizeKB     = 10
	maxLogSizeKB     = 1000000
	maxSetupRate     = 1000000
	maxRepeat        = 1000
	maxPause         = 3600 // s
)

const (
	onlyClient = " only set by client"
	onlyServer = " only valid when server"
)

// options is in the order of OB-UDPST's getopt string
// "ud46C:x1evsf:jTDXSO:B:ri:oRa:y:K:m:G:nI:t:P:p:A:b:L:U:F:c:h:q:E:Ml:k:Z:",
// which is the order the checks run in, then our own options.
var options = []option{
	{name: "upstream", letter: "u", role: forClient, category: catTest,
		usage: "test upstream (client to server)", wrongRole: "ERROR: Upstream test is a client option (udpstp client -u)"},
	{name: "downstream", letter: "d", role: forClient, category: catTest,
		usage: "test downstream (server to client)", wrongRole: "ERROR: Downstream test is a client option (udpstp client -d)"},
	{name: "ipv4", letter: "4", role: forBoth, category: catPackets, usage: "use IPv4 only"},
	{name: "ipv6", letter: "6", role: forBoth, category: catPackets, usage: "use IPv6 only"},
	{name: "connections", letter: "C", role: forClient, kind: text, lo: 1, hi: control.MaxConnsPerClient, category: catTest,
		usage: "minimum[-maximum] number of Test Connections, `cnt[-max]` (1-24 each)", def: "1 per server",
		wrongRole: "ERROR: Multi-connection count" + onlyClient},
	{name: "daemon", letter: "x", role: forServer, category: catService,
		usage: "run as a background (daemon) process, from a shell; not under systemd", wrongRole: "ERROR: Execution as daemon" + onlyServer},
	{name: "one-test", letter: "1", role: forServer, category: catService,
		usage: "exit after the first Test Connection ends", wrongRole: "ERROR: One test execution" + onlyServer},
	{name: "show-errors", letter: "e", role: forBoth, category: catOutput, usage: "show socket send/receive errors and overruns (suppressed by default): totals per Test Connection when it ends"},
	{name: "verbose", letter: "v", role: forBoth, category: catOutput, usage: "verbose output"},
	{name: "summary-only", letter: "s", role: forBoth, category: catOutput, usage: "summary and maximum only, no Sub-Interval lines"},
	{name: "format", letter: "f", role: forClient, kind: text, category: catOutput,
		usage: "JSON output `format`: json, jsonb (brief) or jsonf (formatted)", def: "text", values: []string{"text", "json", "jsonb", "jsonf"},
		wrongRole: "ERROR: Output format options only available to client"},
	{name: "no-jumbo", letter: "j", role: forBoth, category: catPackets,
		usage: "disable jumbo datagram sizes above 1 Gbps (client and server must agree)"},
	{name: "traditional-mtu", letter: "T", role: forBoth, category: catPackets,
		usage: "use datagram sizes for a traditional 1500-byte MTU (client and server must agree)"},
	{name: "debug", letter: "D", role: forBoth, category: catOutput, usage: "debug output (needs --verbose)"},
	{name: "random-payload", letter: "X", role: forBoth, category: catPackets,
		usage: "ask for random payload instead of zeroes (the server must allow it)", srvUsage: "allow clients random payload instead of zeroes"},
	{name: "show-rates", letter: "S", role: forBoth, category: catOutput,
		usage: "print the sending rate table (as udpstp rates does, honouring -j -T -6) and exit"},
	{name: "export", letter: "O", role: forBoth, kind: text, category: catOutput,
		usage:    "export received load metadata, OB-UDPST's CSV, to `[+]file` ('+': every Load PDU, not just those with an RTT sample); #i #c #I #l #r #s #d #M #D #H #p #E and strftime conversions expanded; downstream only",
		srvUsage: "export received load metadata to `[+]file` (not supported yet on the server)", unsupported: forServer},
	{name: "bandwidth", letter: "B", role: forBoth, kind: decimal, lo: 0, hi: control.MaxClientBandwidth, srvHi: control.MaxServerBandwidth, category: catTest,
		usage: "bandwidth the test needs in `Mbps`, required by a server that has --bandwidth (0-32767)", def: "0 = none",
		srvUsage: "bandwidth available per direction in `Mbps`; clients must then state theirs (0-100000)", srvDef: "0 = unlimited"},
	{name: "loss-ratio", letter: "r", role: forBoth, category: catOutput, usage: "show loss ratio instead of delivered percentage"},
	{name: "bimodal", letter: "i", role: forClient, kind: text, lo: 1, hi: maxBimodal, category: catOutput,
		usage:     "bimodal maxima, `[-]count` initial Sub-Intervals; '-' also suppresses rate adjustment in them (1-36000)",
		wrongRole: "ERROR: Bimodal option only available to client"},
	{name: "one-way-delay", letter: "o", role: forClient, category: catAlgo,
		usage: "use one-way delay instead of RTT for delay variation", wrongRole: "ERROR: One-Way Delay option" + onlyClient},
	{name: "dscp-ecn", letter: "m", role: forBoth, kind: cInteger, lo: 0, hi: control.MaxDSCPECN, category: catPackets,
		usage: "DSCP+ECN octet of the test traffic, `value` decimal, 0x hex or 0 octal (0-255)", def: "0",
		srvUsage: "highest DSCP+ECN octet granted, `value` decimal, 0x hex or 0 octal (0-255)", srvDef: "255"},
	{name: "include-ooo-dup", letter: "R", role: forClient, category: catAlgo,
		usage:     "count out-of-order and duplicate datagrams as sequence errors",
		wrongRole: "ERROR: Option to ignore Out-of-Order/Duplicates" + onlyClient},
	{name: "auth-key", letter: "a", role: forBoth, kind: text, category: catAuth,
		usage: "authentication `key` (64 characters max)"},
	{name: "key-id", letter: "y", role: forClient, kind: decimal, lo: 0, hi: maxKeyID, category: catAuth,
		usage: "key `ID` sent with the key (0-255)", def: "0", wrongRole: "ERROR: Authentication key ID" + onlyClient},
	{name: "key-file", letter: "K", role: forBoth, kind: text, category: catAuth,
		usage: "key `file` of id,key lines (OB-UDPST's format)"},
	{name: "stats-file", letter: "G", role: forServer, kind: text, category: catService,
		usage:     "server performance statistics, OB-UDPST's JSON, to `file` every 5 minutes (strftime conversions expanded)",
		wrongRole: "ERROR: Performance statistics file" + onlyServer},
	{name: "no-seq-rollback", letter: "n", role: forBoth, category: catPackets,
		usage: "no adjustment of sequence numbers after local send backpressure"},
	{name: "rate-index", letter: "I", role: forBoth, kind: text, lo: 0, hi: dataphase.MaxRateIndex, category: catTest,
		usage: "fixed sending rate row, or with @ the starting row, `[@]index` (0-1152; see udpstp rates)", def: "auto",
		srvUsage: "highest sending rate row granted, `index` (0-1152)", srvDef: "1152"},
	{name: "test-time", letter: "t", role: forBoth, kind: decimal, lo: control.MinTestIntTime, hi: control.MaxTestIntTime, category: catTest,
		usage: "test time in `seconds` (5-3600)", def: "10",
		srvUsage: "longest test granted in `seconds` (5-3600)", srvDef: "3600"},
	{name: "sub-interval", letter: "P", role: forClient, kind: decimal, lo: control.MinSubIntPeriod, hi: control.MaxSubIntPeriod, category: catTest,
		usage: "Sub-Interval period in `ms` (100-10000)", def: "1000", wrongRole: "ERROR: Sub-interval period" + onlyClient},
	{name: "port", letter: "p", role: forBoth, kind: decimal, lo: 1, hi: maxPort, category: catTest,
		usage: "control `port` of the servers (1-65535); server:port overrides it", def: "24601",
		srvUsage: "control `port` (1-65535); address:port overrides it", srvDef: "24601"},
	{name: "algorithm", letter: "A", role: forClient, kind: text, category: catAlgo,
		usage: "rate adjustment `algorithm`: B or C", def: "B", values: []string{"B", "C"}, wrongRole: "ERROR: Rate adjustment algorithm" + onlyClient},
	{name: "socket-buffer", letter: "b", role: forBoth, kind: decimal, lo: 0, hi: control.MaxSockBuf, category: catPackets,
		usage: "SO_SNDBUF/SO_RCVBUF request in `bytes`, 0 = system default (0-16777216)", def: "1024000"},
	{name: "low-threshold", letter: "L", role: forClient, kind: decimal, lo: 1, hi: control.MaxDelayThresh, category: catAlgo,
		usage: "low delay variation threshold in `ms` (1-10000)", def: "30", wrongRole: "ERROR: Low delay variation threshold" + onlyClient},
	{name: "upper-threshold", letter: "U", role: forClient, kind: decimal, lo: 1, hi: control.MaxDelayThresh, category: catAlgo,
		usage: "upper delay variation threshold in `ms` (1-10000)", def: "90", wrongRole: "ERROR: Upper delay variation threshold" + onlyClient},
	{name: "trial-interval", letter: "F", role: forClient, kind: decimal, lo: control.MinTrialInt, hi: control.MaxTrialInt, category: catAlgo,
		usage: "status feedback/trial interval in `ms` (5-250)", def: "50", wrongRole: "ERROR: Status feedback/trial interval" + onlyClient},
	{name: "slow-adjust", letter: "c", role: forClient, kind: decimal, lo: 1, hi: maxSlowAdj, category: catAlgo,
		usage: "congestion slow adjustment `threshold` (1-65535)", def: "3", wrongRole: "ERROR: Congestion slow adjustment threshold" + onlyClient},
	{name: "high-speed-delta", letter: "h", role: forClient, kind: decimal, lo: 1, hi: maxHSDelta, category: catAlgo,
		usage: "high-speed row adjustment `delta` (1-255)", def: "10", wrongRole: "ERROR: High-speed delta" + onlyClient},
	{name: "seq-error-threshold", letter: "q", role: forClient, kind: decimal, lo: 0, hi: maxSeqErr, category: catAlgo,
		usage: "sequence error `threshold` (0-65535)", def: "10", wrongRole: "ERROR: Sequence error threshold" + onlyClient},
	{name: "interface", letter: "E", role: forClient, kind: text, category: catOutput,
		usage:     "show the traffic rate of local interface `intf` too, from its kernel counters (/sys/class/net)",
		wrongRole: "ERROR: Local interface option only available to client"},
	{name: "interface-max", letter: "M", role: forClient, category: catOutput,
		usage:     "use the local interface rate for the maximum, needs --interface",
		wrongRole: "ERROR: Maximum from local interface only available to client"},
	{name: "log-file", letter: "l", role: forServer, kind: text, category: catService,
		usage: "log `file` when running as daemon (needs --daemon)", wrongRole: "ERROR: Log file" + onlyServer},
	{name: "log-size", letter: "k", role: forServer, kind: decimal, lo: minLogSizeKB, hi: maxLogSizeKB, category: catService,
		usage: "log file maximum size in `KBytes` (1000 bytes each), then it becomes file.old (10-1000000)", def: "1000",
		wrongRole: "ERROR: Log file maximum size" + onlyServer},
	{name: "ecn-ce-threshold", letter: "Z", role: forClient, kind: decimal, lo: 1, hi: maxCEThresh, category: catAlgo,
		usage: "ECN CE `threshold` (1-255), needs --dscp-ecn with ECN bits 01 or 10", def: "0 = off",
		wrongRole: "ERROR: ECN CE threshold" + onlyClient},

	// Ours.
	{name: "output", role: forClient, kind: text, category: catOutput,
		usage: "also write the JSON result to `FILE`, atomically", wrongRole: "ERROR: Output file only valid when client"},
	{name: "protocol", role: forClient, kind: decimal, lo: int(control.MinLegacyProtocolVer), hi: int(control.ProtocolVersion), category: catTest,
		usage: "speak protocol version `N` to an older server: 8-9 OB-UDPST 7.x, 10 8.0-8.1, 11 8.2 (8-20; below 20 no key, -Z or -i -n; below 10 one connection)",
		def:   "20", wrongRole: "ERROR: Protocol version only valid when client"},
	{name: "bidirectional", role: forClient, category: catTest,
		usage:     "test both directions at once, one upstream and one downstream test (-C n: n of each), after an idle baseline; -u -d together say the same",
		wrongRole: "ERROR: Bidirectional test only valid when client"},
	{name: "repeat", role: forClient, kind: decimal, lo: 1, hi: maxRepeat, category: catTest,
		usage: "run `N` complete tests in a row, report each and their aggregate (1-1000)", wrongRole: "ERROR: Repeated tests only valid when client"},
	{name: "pause", role: forClient, kind: text, lo: 0, hi: maxPause, category: catTest,
		usage: "wait `duration` between the tests of --repeat: 30s, 2m, 500ms, or seconds (0-3600 s)", def: "0",
		wrongRole: "ERROR: Pause between tests only valid when client"},
	{name: "textfile", role: forClient, kind: text, category: catOutput,
		usage:     "also write the result for node_exporter's textfile collector to `FILE` (*.prom), atomically, also when the test fails",
		wrongRole: "ERROR: Textfile only valid when client"},
	{name: "extensions", role: forClient, category: catOutput,
		usage:     "add udpstp's own figures to the JSON result under a last \"udpstp\" key: skipped Bursts, each connection's figures, delays to the µs, a search still rising (without it, exactly OB-UDPST's keys)",
		wrongRole: "ERROR: Extensions only valid when client"},
	{name: "json-stream", role: forClient, category: catOutput,
		usage:     "write the test's events as they happen, one JSON object per line (docs/json-stream.md); implies --format json",
		wrongRole: "ERROR: JSON stream only valid when client"},
	{name: "progress", role: forClient, kind: text, category: catOutput,
		usage: "status line on standard error during the test, `when`: auto (a terminal, text output without -s), always or never",
		def:   "auto", values: []string{progressAuto, progressAlways, progressNever},
		wrongRole: "ERROR: Progress line only valid when client"},
	{name: "no-gso", role: forBoth, category: catPackets, usage: "do not send with UDP segmentation offload (GSO)"},
	{name: "log-format", role: forServer, kind: text, category: catService,
		usage: "log line `format`: text or json", def: "text", values: []string{"text", "json"}, wrongRole: "ERROR: Log format only valid when server"},
	{name: "log-level", role: forServer, kind: text, category: catService,
		usage: "least log `level` shown: debug, info, warn or error", def: "info; debug with --debug", values: []string{"debug", "info", "warn", "error"},
		wrongRole: "ERROR: Log level only valid when server"},
	{name: "max-connections", role: forServer, kind: decimal, lo: 1, hi: control.MaxConnsPerServer, category: catService,
		usage: "most Test Connections at once, `count`, all clients together (1-254)", def: "254",
		wrongRole: "ERROR: Maximum connection count only valid when server"},
	{name: "setup-rate", role: forServer, kind: decimal, lo: 0, hi: maxSetupRate, category: catService,
		usage:     "Setup Requests handled from one source address, `per-second`, in bursts of up to 48 (or the rate); more are dropped (0 = no limit, the default)",
		def:       "0",
		wrongRole: "ERROR: Setup request rate only valid when server"},
	{name: "test-ports", role: forServer, kind: text, category: catService,
		usage:     "draw each test port at random from `LO-HI` (a range the firewall opens)",
		def:       "the kernel's ephemeral range",
		wrongRole: "ERROR: Test port range only valid when server"},
	{name: "max-conns-per-source", role: forServer, kind: decimal, lo: 1, hi: control.MaxConnsPerServer, category: catService,
		usage:     "most Test Connections, pending and running, from one source, `count` (an IPv4 address, an IPv6 prefix)",
		def:       fmt.Sprint(control.DefaultMaxConnsPerSource),
		wrongRole: "ERROR: Per-source connection cap only valid when server"},
	{name: "source-prefix6", role: forServer, kind: decimal, lo: 32, hi: 128, category: catService,
		usage:     "IPv6 prefix `length` a source is counted by for its caps",
		def:       fmt.Sprint(control.DefaultSourcePrefix6),
		wrongRole: "ERROR: Source prefix length only valid when server"},
	{name: "metrics-listen", role: forServer, kind: text, category: catService,
		usage:     "serve Prometheus metrics at http://`ADDR:PORT`/metrics; bind a management address, not one clients test against",
		def:       "off",
		wrongRole: "ERROR: Metrics endpoint only valid when server"},
	{name: "drain-timeout", role: forServer, kind: text, lo: 0, hi: maxDrainTimeout, category: catService,
		usage: "on SIGTERM stop admitting and let running tests finish for up to `duration` (30s, 1h, or seconds; 0: stop at once); a second SIGTERM or SIGINT stops at once",
		def:   "the longest test granted (-t) + 10s", wrongRole: "ERROR: Drain timeout only valid when server"},
	// The server's archive (docs/fleet.md).
	{name: "archive", role: forServer, kind: text, category: catService,
		usage: "keep a record of every test served in `DIR`: gzipped NDJSON files, rotated", def: "off",
		wrongRole: "ERROR: Archive only valid when server"},
	{name: "store", role: forServer, kind: text, category: catService,
		usage: "also put each test's record in the result store `SPEC`: sqlite:PATH or postgres://...", def: "off",
		wrongRole: "ERROR: Result store only valid when server"},
	{name: "archive-key", role: forServer, kind: text, category: catService,
		usage: "key `FILE` of the client pseudonyms (HMAC-SHA256); made, mode 0600, if absent", def: "a key per run",
		wrongRole: "ERROR: Archive key only valid when server"},
	{name: "archive-addresses", role: forServer, kind: text, category: catService,
		usage: "client addresses in the records: `how`, pseudonym or plain", def: "pseudonym",
		values: []string{"pseudonym", "plain"}, wrongRole: "ERROR: Archive addresses only valid when server"},
	{name: "archive-max-size", role: forServer, kind: decimal, lo: 1, hi: maxArchiveSizeMB, category: catService,
		usage: "finish an archive file at `MiB` (compressed)", def: "64",
		wrongRole: "ERROR: Archive file size only valid when server"},
	{name: "archive-max-age", role: forServer, kind: text, category: catService,
		usage: "finish an archive file this `duration` after it was begun (readers see finished files only): 1m, 1h", def: "1m",
		wrongRole: "ERROR: Archive file age only valid when server"},
	{name: "archive-retention", role: forServer, kind: text, category: catService,
		usage: "delete finished archive files older than `duration`: 720h (0 = keep them)", def: "0",
		wrongRole: "ERROR: Archive retention only valid when server"},
	{name: "archive-name", role: forServer, kind: text, category: catService,
		usage: "this server's `name` in the records", def: "the host name",
		wrongRole: "ERROR: Archive server name only valid when server"},
}

// maxDrainTimeout is --drain-timeout's largest value, s: a day.
const maxDrainTimeout = 86400

// optionByName indexes options by long name.
var optionByName = func() map[string]*option {
	m := make(map[string]*option, len(options))
	for i := range options {
		m[options[i].name] = &options[i]
	}
	return m
}()

// opt returns the option called name; an unknown name is a bug.
func opt(name string) *option {
	o, ok := optionByName[name]
	if !ok {
		panic("udpstp: no option " + name)
	}
	return o
}

// String names the option in messages as users may type it: --long/-l.
func (o *option) String() string {
	if o.letter == "" {
		return "--" + o.name
	}
	return "--" + o.name + "/-" + o.letter
}

// limits returns the option's value range for role r.
func (o *option) limits(r role) (lo, hi int) {
	if r == forServer && o.srvHi != 0 {
		return o.lo, o.srvHi
	}
	return o.lo, o.hi
}

// flagsFor returns fresh cli flags for every option. Options of the other
// role are defined too, hidden, so that they reach the role check and get
// OB-UDPST's message rather than "flag provided but not defined".
func flagsFor(r role) []cli.Flag {
	flags := make([]cli.Flag, 0, len(options))
	for i := range options {
		o := &options[i]
		var aliases []string
		if o.letter != "" {
			aliases = []string{o.letter}
		}
		usage, def := o.usage, o.def
		if r == forServer && o.srvUsage != "" {
			usage, def = o.srvUsage, o.srvDef
		}
		hidden := o.role&r == 0
		if o.kind == switchOpt {
			flags = append(flags, &cli.BoolFlag{Name: o.name, Aliases: aliases, Usage: usage,
				Category: o.category, Hidden: hidden, DisableDefaultText: true})
			continue
		}
		flags = append(flags, &cli.StringFlag{Name: o.name, Aliases: aliases, Usage: usage,
			Category: o.category, Hidden: hidden, DefaultText: def, TakesFile: takesFile(usage)})
	}
	return flags
}

// takesFile reports whether an option's value is a file name, as its
// usage's placeholder says ("`file`", "`[+]file`", "`FILE`"), so that
// shell completion offers file names there.
func takesFile(usage string) bool {
	p, _ := unquoteUsage(usage)
	return strings.HasSuffix(strings.ToLower(p), "file")
}

// configError is a command-line error: one line, exit status 50.
func configError(format string, a ...any) error {
	return cli.Exit(fmt.Sprintf(format, a...), exitConfig)
}

// rangeError is OB-UDPST's out-of-range message with the option named.
func rangeError(what string, v any, lo, hi int) error {
	return configError("ERROR: Parameter %v out-of-range for %s (%d-%d)", v, what, lo, hi)
}

// parseDecimal reads a decimal integer for what and checks it against
// lo..hi. Where OB-UDPST's atoi would turn junk into 0 (or ignore a
// trailing unit), it is refused and named.
func parseDecimal(what, s string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(s)
	if errors.Is(err, strconv.ErrRange) {
		return 0, rangeError(what, s, lo, hi)
	}
	if err != nil {
		return 0, configError("ERROR: '%s' is not a valid number for %s (%d-%d)", s, what, lo, hi)
	}
	if n < lo || n > hi {
		return 0, rangeError(what, n, lo, hi)
	}
	return n, nil
}

// parseCInteger reads an integer in C syntax, as OB-UDPST's strtol(s, NULL,
// 0) does for -m: decimal, 0x hex, or octal after a leading 0 (so "010" is
// 8). Go's extras (0b, 0o, underscores) are refused, as is trailing junk,
// which strtol would silently ignore.
func parseCInteger(what, s string, lo, hi int) (int, error) {
	digits := strings.TrimLeft(s, "+-")
	bad := strings.ContainsRune(s, '_') ||
		len(digits) > 1 && digits[0] == '0' && strings.ContainsRune("bBoO", rune(digits[1]))
	n, err := strconv.ParseInt(s, 0, 64)
	switch {
	case bad || err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, configError("ERROR: '%s' is not a valid number for %s (%d-%d; decimal, 0x hex or 0 octal)", s, what, lo, hi)
	case err != nil:
		return 0, rangeError(what, s, lo, hi)
	case n < int64(lo) || n > int64(hi):
		return 0, rangeError(what, n, lo, hi)
	}
	return int(n), nil
}

// optionValues reads the parsed options of one command for one role.
type optionValues struct {
	c    *cli.Context
	role role
}

func (v optionValues) set(name string) bool    { return v.c.IsSet(opt(name).name) }
func (v optionValues) on(name string) bool     { return v.c.Bool(opt(name).name) }
func (v optionValues) text(name string) string { return v.c.String(opt(name).name) }

// number reads a decimal or C-integer option into dst when it was given.
func (v optionValues) number(name string, dst *int) error {
	if !v.set(name) {
		return nil
	}
	o := opt(name)
	lo, hi := o.limits(v.role)
	parse := parseDecimal
	if o.kind == cInteger {
		parse = parseCInteger
	}
	n, err := parse(o.String(), v.text(name), lo, hi)
	if err != nil {
		return err
	}
	*dst = n
	return nil
}

// numbers reads several options in order, stopping at the first error.
func (v optionValues) numbers(fields []numberField) error {
	for _, f := range fields {
		if err := v.number(f.name, f.dst); err != nil {
			return err
		}
	}
	return nil
}

// numberField binds an option to the config field it sets.
type numberField struct {
	name string
	dst  *int
}

// checkRole refuses, in table order, the first option given that belongs
// to the other role, with OB-UDPST's message and our name for it.
func checkRole(c *cli.Context, r role) error {
	for i := range options {
		o := &options[i]
		if o.role&r == 0 && c.IsSet(o.name) {
			return configError("%s (%s)", o.wrongRole, o)
		}
	}
	return nil
}

// checkUnsupported refuses the first option given whose work is not done
// yet. It runs after validation, so a command that is wrong anyway gets
// the message that says why.
func checkUnsupported(c *cli.Context, r role) error {
	for i := range options {
		o := &options[i]
		if o.unsupported&r != 0 && c.IsSet(o.name) {
			return configError("%s is not supported yet", o)
		}
	}
	return nil
}

// family reads -4/-6. OB-UDPST lets the last one win; giving both is
// surely a mistake, so it is refused.
func family(v optionValues) (dataphase.Family, error) {
	v4, v6 := v.on("ipv4"), v.on("ipv6")
	switch {
	case v4 && v6:
		return 0, configError("ERROR: %s and %s are mutually exclusive", opt("ipv4"), opt("ipv6"))
	case v4:
		return dataphase.FamilyV4, nil
	case v6:
		return dataphase.FamilyV6, nil
	}
	return dataphase.FamilyAny, nil
}

// checkAuthKey applies control.ValidateKey to -a: OB-UDPST's length limit,
// and an empty key refused, which OB-UDPST would silently treat as no
// authentication. The message keeps OB-UDPST's capitalised wording
// ("ERROR: Authentication key exceeds 64 characters").
func checkAuthKey(v optionValues) error {
	if !v.set("auth-key") {
		return nil
	}
	if err := control.ValidateKey(v.text("auth-key")); err != nil {
		msg := err.Error()
		return configError("ERROR: %s%s (%s)", strings.ToUpper(msg[:1]), msg[1:], opt("auth-key"))
	}
	return nil
}

// loadKeyFile reads -K when given; its errors are key file errors, exit
// status 51 as in OB-UDPST, with the parser's line.
func loadKeyFile(v optionValues) (*control.KeyFile, error) {
	if !v.set("key-file") {
		return nil, nil
	}
	f, err := control.LoadKeyFile(v.text("key-file"))
	if err != nil {
		return nil, cli.Exit("ERROR: "+err.Error(), exitKeyFile)
	}
	return f, nil
}

// checkDebug applies OB-UDPST's rule that -D needs -v.
func checkDebug(v optionValues) error {
	if v.on("debug") && !v.on("verbose") {
		return configError("ERROR: Debug only available when used with verbose (%s needs %s)", opt("debug"), opt("verbose"))
	}
	return nil
}

// showRates prints the sending rate table for -S, as `udpst -S` does
// after its checks, instead of running.
func showRates(c *cli.Context, noJumbo, traditionalMTU bool, fam dataphase.Family) error {
	o := dataphase.TableOptions{NoJumbo: noJumbo, TraditionalMTU: traditionalMTU}
	if err := writeRateTable(c.App.Writer, o, fam == dataphase.FamilyV6); err != nil {
		return fmt.Errorf("%s: %w", opt("show-rates"), err)
	}
	return nil
}
