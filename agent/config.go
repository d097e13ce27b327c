package agent

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/atomicfile"
	"github.com/udpstp/udpstp/store"
)

// Defaults and limits of the configuration file; docs/agent.md lists every
// key.
const (
	DefaultEvery = 6 * time.Hour // M-Lab's ndt7 clients' mean spacing
	// MinEvery is the shortest mean spacing a file may ask for, for
	// trying the agent; below AdviseEvery the log warns at each load: a
	// probe testing more often than that measures mostly its own load.
	MinEvery         = time.Minute
	AdviseEvery      = 10 * time.Minute
	DefaultTolerance = time.Minute // a slot later than this is missed
	// DefaultProbeMax and DefaultProbeInterval bound /probe: the longest
	// test it runs and the least time between two of its tests.
	DefaultProbeMax      = 10 * time.Second
	DefaultProbeInterval = 10 * time.Second
	MaxTests             = 100
	// MaxProbeTargets bounds [probe] targets, and MaxTargetLen each
	// target: a target becomes a label of /metrics and a row's server.
	MaxProbeTargets = 100
	MaxTargetLen    = 255
	// The --http listener's defaults: connections held at once (a
	// connection past it waits in the kernel's accept queue), how long
	// an idle keep-alive connection and a request's headers may take,
	// and the live streams of one client address.
	DefaultHTTPMaxConns          = 64
	DefaultHTTPIdleTimeout       = 60 * time.Second
	DefaultHTTPReadHeaderTimeout = 10 * time.Second
	DefaultStreamsPerClient      = 4
)

// Direction is a test's direction in the file.
type Direction string

const (
	DirUp   Direction = "up"
	DirDown Direction = "down"
	// DirBoth: a downstream test, then an upstream one, each its own
	// result.
	DirBoth Direction = "both"
	// DirBidirectional: both at once, one result with the latency under
	// load (client.Plan.Bidirectional).
	DirBidirectional Direction = "bidirectional"
)

// Duration is a time span in the file: Go's form ("90s", "6h", "1h30m")
// and days ("30d"). It is a struct, not an integer type, so that the
// decoder hands every value to UnmarshalText: into an integer type it
// stores a bare every = 600 itself, as 600 ns.
type Duration struct{ d time.Duration }

// D is the span.
func (d Duration) D() time.Duration { return d.d }

var daysRe = regexp.MustCompile(`^([0-9]+)d$`)

// UnmarshalText reads a Duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return textError(b, err)
	}
	d.d = v
	return nil
}

// parseDuration reads a Duration's text; a number without a unit (every
// = 600 arrives as "600"), zero and negative spans are refused.
func parseDuration(s string) (time.Duration, error) {
	_, errInt := strconv.ParseInt(s, 0, 64) // 600, 1_000, 0x10
	if _, errFloat := strconv.ParseFloat(s, 64); errInt == nil || errFloat == nil {
		return 0, fmt.Errorf(`%s: a number without a unit: write a string with one ("600s", "10m", "6h", "30d")`, s)
	}
	var v time.Duration
	if m := daysRe.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n > 100000 {
			return 0, fmt.Errorf("duration %q: too long", s)
		}
		v = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if v, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("duration %q: want a number and a unit (90s, 30m, 6h, 30d)", s)
		}
	}
	if v <= 0 {
		return 0, fmt.Errorf("duration %q: must be above zero", s)
	}
	return v, nil
}

// textError is UnmarshalText's error for the value b, naming its line
// and key. go-toml (v2.4.3) adds them itself to the error of a string, but
// returns that of a number or boolean (every = 600, cron = 5) bare; a
// unstable.ParserError gets them, and its highlight b is then a slice of
// the document, as it must be (for a string only the message is used).
func textError(b []byte, err error) error {
	return unstable.NewParserError(b, "%s", err)
}

// fileConfig is the file as written.
type fileConfig struct {
	// Tolerance: how late a slot may be kept; later, it is missed.
	Tolerance Duration      `toml:"tolerance"`
	Retention fileRetention `toml:"retention"`
	Probe     fileProbe     `toml:"probe"`
	HTTP      fileHTTP      `toml:"http"`
	Cross     fileCross     `toml:"crosstraffic"`
	Tests     []fileTest    `toml:"test"`
}

type fileRetention struct {
	MaxAge   Duration `toml:"max_age"`
	MaxCount int      `toml:"max_count"`
}

type fileProbe struct {
	MaxDuration Duration `toml:"max_duration"`
	MinInterval Duration `toml:"min_interval"`
	Targets     []string `toml:"targets"`
	MaxRateMbps int      `toml:"max_rate_mbps"`
}

// fileHTTP is the --http listener's section (docs/agent.md, "The HTTP
// listener").
type fileHTTP struct {
	Hosts             []string `toml:"hosts"`
	MaxConnections    int      `toml:"max_connections"`
	IdleTimeout       Duration `toml:"idle_timeout"`
	ReadHeaderTimeout Duration `toml:"read_header_timeout"`
	StreamsPerClient  int      `toml:"streams_per_client"`
}

type fileTest struct {
	Name      string         `toml:"name"`
	Servers   []string       `toml:"servers"`
	Direction Direction      `toml:"direction"`
	Every     Duration       `toml:"every"`
	Cron      cronText       `toml:"cron"`
	Select    string         `toml:"select"`
	Options   map[string]any `toml:"options"`
}

// Config is a configuration, checked and resolved.
type Config struct {
	Path      string // "" without a file
	Tolerance time.Duration
	Retention store.Retention
	ProbeMax  time.Duration
	// ProbeInterval is the least time between the starts of two /probe
	// tests (the rate limit).
	ProbeInterval time.Duration
	// ProbeTargets are the targets /probe accepts, as written: any other
	// is refused before a lookup or a packet (docs/security.md, "The
	// agent's HTTP surface").
	ProbeTargets []string
	// ProbeMaxRateMbps bounds a /probe test's rate, the automatic
	// search's too (control.ClientConfig.MaxRateMbps); 0: no bound.
	ProbeMaxRateMbps int
	HTTP             HTTPConfig
	// CrossTraffic is [crosstraffic] (crosstraffic.go).
	CrossTraffic CrossConfig
	Tests        []*Test
	// Warnings are what the file asks that works but is unwise (a
	// spacing below AdviseEvery), file:line: key: why; logged at each
	// load.
	Warnings []string
}

// HTTPConfig is the --http listener's: the Host names it answers to
// besides loopback and address literals, and its connection bounds. The
// bounds are read once, when the listener opens; Hosts on every reload.
type HTTPConfig struct {
	Hosts             []string
	MaxConnections    int
	IdleTimeout       time.Duration
	ReadHeaderTimeout time.Duration
	// StreamsPerClient bounds the live-progress streams (/events) one
	// client address holds.
	StreamsPerClient int
}

// Test is one test of the file.
type Test struct {
	Name      string
	Servers   []control.ServerAddr // in failover order
	Direction Direction
	Schedule  Schedule
	// Client is the client's configuration for the first server, as the
	// command line would make it from Options; Plan its Plan.
	Client *control.ClientConfig
	Plan   client.Plan
	// Select is how the servers are chosen: client.SelectOrder, in
	// Servers' order (a `srv:NAME`'s, RFC 2782's), or client.SelectRTT,
	// by their Setup round trips (client/rttselect.go).
	Select client.Select
}

// ClientParser turns a client's command-line arguments (options, then
// servers) into its configuration, with the command line's checks and
// messages: `udpstp client`'s own parser, which the command hands in.
type ClientParser func(args []string) (*control.ClientConfig, client.Plan, error)

// LoadOptions are what loading needs beyond the file.
type LoadOptions struct {
	Parse ClientParser
	// MinEvery overrides MinEvery (tests of the agent itself); 0: MinEvery.
	MinEvery time.Duration
}

// Default is the configuration without a file: no scheduled tests.
func Default() *Config {
	return &Config{Tolerance: DefaultTolerance, ProbeMax: DefaultProbeMax, ProbeInterval: DefaultProbeInterval,
		HTTP: HTTPConfig{MaxConnections: DefaultHTTPMaxConns, IdleTimeout: DefaultHTTPIdleTimeout,
			ReadHeaderTimeout: DefaultHTTPReadHeaderTimeout, StreamsPerClient: DefaultStreamsPerClient},
		CrossTraffic: defaultCross()}
}

// MaxConfigSize bounds the configuration file: MaxTests tests with long
// options fit in it many times over.
const MaxConfigSize = 1 << 20

// Load reads and checks the file at path. Every error names the file, the
// line and the key. The file is the agent's own: a symbolic link, FIFO or
// device at the name, or a file above MaxConfigSize, is refused at once,
// never waited on (a reload on SIGHUP must not hold up SIGTERM:
// docs/security.md).
func Load(path string, o LoadOptions) (*Config, error) {
	b, err := atomicfile.ReadFile(path, MaxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	return Parse(path, b, o)
}

// Parse checks b, the contents of the file named path.
func Parse(path string, b []byte, o LoadOptions) (*Config, error) {
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f fileConfig
	if err := dec.Decode(&f); err != nil {
		return nil, decodeError(path, b, err)
	}
	lines, err := keyLines(b)
	if err != nil { // the decoder read it: not expected
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := &configChecker{path: path, lines: lines, o: o}
	if c.o.MinEvery <= 0 {
		c.o.MinEvery = MinEvery
	}
	return c.resolve(&f)
}

// decodeError says where the decoder stopped: file:line: key: why.
func decodeError(path string, b []byte, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		msg := typeMessage(strings.TrimPrefix(de.Error(), "toml: "))
		if k := de.Key(); len(k) > 0 {
			return fmt.Errorf("%s:%d: %s: %s", path, row, elementKey(b, row, k), msg)
		}
		return fmt.Errorf("%s:%d: %s", path, row, msg)
	}
	var se *toml.StrictMissingError
	if errors.As(err, &se) && len(se.Errors) > 0 {
		e := se.Errors[0]
		row, _ := e.Position()
		return fmt.Errorf("%s:%d: %s: unknown key", path, row, strings.Join(e.Key(), "."))
	}
	return fmt.Errorf("%s: %w", path, err)
}

// typeRe is the decoder's message for a value of the wrong kind, which
// names Go's types (agent.fileProbe): typeMessage says it in the file's
// terms.
var typeRe = regexp.MustCompile(`^cannot decode TOML (\w+) into struct field \S+ of type (.+)$`)

func typeMessage(msg string) string {
	m := typeRe.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	want := "another kind of value"
	switch t := m[2]; {
	case strings.HasPrefix(t, "[]agent.file"):
		want = "tables ([[...]])"
	case strings.HasPrefix(t, "agent.file"):
		want = "a table ([...] or { key = value })"
	case t == "[]string":
		want = `an array of strings (["a", "b"])`
	case strings.HasPrefix(t, "map["):
		want = "a table ({ key = value })"
	case t == "string" || t == "agent.Direction" || t == "agent.cronText":
		want = "a string"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		want = "an integer"
	case t == "bool":
		want = "true or false"
	}
	return fmt.Sprintf("want %s, not a TOML %s", want, m[1])
}

// elementKey names the decoder's key (without the array index) as the
// other errors do: test[2].every for the key on row of the second [[test]].
func elementKey(b []byte, row int, key []string) string {
	lines, err := keyLines(b)
	want := strings.Join(key, ".")
	if err == nil {
		for k, l := range lines {
			if l == row && indexRe.ReplaceAllString(k, "$2") == want {
				return displayKey(k)
			}
		}
	}
	return want
}
