package agent

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
)

// fakeParse stands for the client's parser (cmd/udpstp hands in the real
// one, tested there): a direction, --test-time N, then "--" and one
// host[:port].
func fakeParse(args []string) (*control.ClientConfig, client.Plan, error) {
	cfg := control.DefaultClientConfig()
	var plan client.Plan
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--upstream":
			cfg.Upstream = true
		case "--downstream":
		case "--bidirectional":
			plan.Bidirectional = true
		case "--test-time":
			i++
			n, err := strconv.Atoi(args[i])
			if err != nil || n < 1 || n > 3600 {
				return nil, plan, fmt.Errorf("ERROR: Test time must be 1-3600 (--test-time/-t)")
			}
			cfg.TestIntTime = n
		case "--":
			host, port, ok := strings.Cut(args[i+1], ":")
			p := control.DefaultControlPort
			if ok {
				var err error
				if p, err = strconv.Atoi(port); err != nil {
					return nil, plan, fmt.Errorf("ERROR: bad port in '%s'", args[i+1])
				}
			}
			cfg.Servers = []control.ServerAddr{{Host: host, Port: p}}
			return &cfg, plan, nil
		default:
			return nil, plan, fmt.Errorf("ERROR: Unknown option %s", args[i])
		}
	}
	return nil, plan, fmt.Errorf("no server")
}

var testLoad = LoadOptions{Parse: fakeParse}

const goodConfig = `# a probe's tests
tolerance = "2m"

[retention]
max_age = "90d"
max_count = 1000

[[test]]
name = "home-down"
servers = ["a.example", "b.example:25000"]
direction = "down"
every = "6h"
select = "rtt"

[[test]]
name = "nightly"
servers = ["a.example"]
direction = "both"
cron = "30 3 * * *"
[test.options]
test-time = 5

[[test]]
name = "rpm"
servers = ["a.example"]
direction = "bidirectional"
options = { test-time = 7 }
`

func TestConfigGood(t *testing.T) {
	c, err := Parse("agent.toml", []byte(goodConfig), testLoad)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tolerance != 2*time.Minute || c.Retention.MaxAge != 90*24*time.Hour || c.Retention.MaxCount != 1000 {
		t.Errorf("tolerance/retention: %+v", c)
	}
	if len(c.Tests) != 3 {
		t.Fatalf("%d tests", len(c.Tests))
	}
	a, n, r := c.Tests[0], c.Tests[1], c.Tests[2]
	if len(a.Servers) != 2 || a.Servers[1] != (control.ServerAddr{Host: "b.example", Port: 25000}) || a.Servers[0].Port != control.DefaultControlPort {
		t.Errorf("servers: %+v", a.Servers)
	}
	if a.Select != client.SelectRTT || n.Select != client.SelectOrder {
		t.Errorf("select: %q, %q", a.Select, n.Select)
	}
	if e, ok := a.Schedule.(Every); !ok || e.Mean != 6*time.Hour {
		t.Errorf("schedule: %v", a.Schedule)
	}
	if _, ok := n.Schedule.(*Cron); !ok || n.Client.TestIntTime != 5 || n.Direction != DirBoth {
		t.Errorf("nightly: %v %+v", n.Schedule, n)
	}
	if !r.Plan.Bidirectional || r.Client.TestIntTime != 7 {
		t.Errorf("rpm: plan %+v test time %d", r.Plan, r.Client.TestIntTime)
	}
	if e, ok := r.Schedule.(Every); !ok || e.Mean != DefaultEvery {
		t.Errorf("default schedule: %v", r.Schedule)
	}
	c, err = Parse("agent.toml", []byte("[probe]\ntargets = [\"a.example:25000\", \"b.example\"]\nmax_rate_mbps = 100\n"+
		"[http]\nhosts = [\"Probe1.Example.Net.\"]\nmax_connections = 8\nidle_timeout = \"5s\"\nstreams_per_client = 2\n"), testLoad)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ProbeTargets) != 2 || c.ProbeMaxRateMbps != 100 || len(c.HTTP.Hosts) != 1 || c.HTTP.Hosts[0] != "probe1.example.net" ||
		c.HTTP.MaxConnections != 8 || c.HTTP.IdleTimeout != 5*time.Second || c.HTTP.ReadHeaderTimeout != DefaultHTTPReadHeaderTimeout ||
		c.HTTP.StreamsPerClient != 2 {
		t.Errorf("[probe] and [http]: %+v", c)
	}
}

// Every refusal names the file, the line and the key.
func TestConfigErrors(t *testing.T) {
	test := func(extra string) string {
		return "[[test]]\nname = \"a\"\nservers = [\"s\"]\ndirection = \"down\"\n\n[[test]]\nname = \"b\"\nservers = [\"s\"]\ndirection = \"up\"\n" + extra
	}
	cases := []struct {
		name, doc, want string
	}{
		{"unknown key", test("colour = \"red\"\n"), "agent.toml:10: test[2].colour"},
		{"unknown top key", "tolerence = \"1m\"\n", "agent.toml:1: tolerence"},
		{"unknown retention key", "[retention]\nmax_agee = \"1d\"\n", "agent.toml:2: retention.max_agee"},
		{"bad duration", test("every = \"6 hours\"\n"), `agent.toml:10: test[2].every: duration "6 hours"`},
		{"zero duration", "tolerance = \"0s\"\n", "agent.toml:1: tolerance: duration \"0s\": must be above zero"},
		{"bad cron", test("cron = \"61 * * * *\"\n"), "agent.toml:10: test[2].cron: cron \"61 * * * *\""},
		{"cron too often", test("cron = \"@every 30s\"\n"), "agent.toml:10: test[2].cron"},
		{"every too short", test("every = \"30s\"\n"), "agent.toml:10: test[2].every: 30s: at least 1m0s"},
		{"every and cron", test("every = \"1h\"\ncron = \"@daily\"\n"), "agent.toml:11: test[2].cron: a test has every or cron, not both"},
		{"bad direction", "[[test]]\nname = \"a\"\nservers = [\"s\"]\ndirection = \"sideways\"\n", "agent.toml:4: test[1].direction: direction \"sideways\""},
		{"wrong type", "[[test]]\nname = \"a\"\nservers = \"s\"\n", "agent.toml:3: test[1].servers"},
		{"bad option", test("[test.options]\ntest-time = 0\n"), "agent.toml:11: test[2].options.test-time: Test time must be 1-3600"},
		{"agent's option", test("[test.options]\noutput = \"x.json\"\n"), "agent.toml:11: test[2].options.output: not an option of an agent's test"},
		{"inline option", test("options = { test-time = 99999 }\n"), "agent.toml:10: test[2].options.test-time"},
		{"option type", test("[test.options]\ntest-time = 1.5\n"), "agent.toml:11: test[2].options.test-time: want a string"},
		{"duplicate name", test("") + "\n[[test]]\nname = \"a\"\nservers = [\"s\"]\ndirection = \"up\"\n", "agent.toml:12: test[3].name: \"a\": another test has that name"},
		{"bad name", "[[test]]\nname = \"a b\"\nservers = [\"s\"]\ndirection = \"up\"\n", "agent.toml:2: test[1].name"},
		{"no servers", "[[test]]\nname = \"a\"\ndirection = \"up\"\n", "agent.toml:1: test[1].servers: missing"},
		{"bad server", "[[test]]\nname = \"a\"\ndirection = \"up\"\nservers = [\"s:x\"]\n", "agent.toml:4: test[1].servers: bad port"},
		{"bad count", "[retention]\nmax_count = -1\n", "agent.toml:2: retention.max_count"},
		{"not toml", "[[test]\n", "agent.toml:1"},
		{"unspecified target", "[probe]\ntargets = [\"s\", \"0.0.0.0:24601\"]\n", "agent.toml:2: probe.targets: target 2, \"0.0.0.0:24601\": 0.0.0.0 is not a server's address"},
		{"multicast target", "[probe]\ntargets = [\"224.0.0.1\"]\n", "agent.toml:2: probe.targets: target 1"},
		{"long target", "[probe]\ntargets = [\"" + strings.Repeat("x", 300) + "\"]\n", "agent.toml:2: probe.targets: target 1"},
		{"bad rate", "[probe]\nmax_rate_mbps = -1\n", "agent.toml:2: probe.max_rate_mbps"},
		{"bad host", "[http]\nhosts = [\"http://a.example/\"]\n", "agent.toml:2: http.hosts: host 1"},
		{"bad max_connections", "[http]\nmax_connections = -5\n", "agent.toml:2: http.max_connections"},
		{"bad select", test("select = \"fastest\"\n"), `agent.toml:10: test[2].select: "fastest": want "order" or "rtt"`},
		{"select rtt with srv in a list", "[[test]]\nname = \"a\"\ndirection = \"up\"\nservers = [\"s\", \"srv:fleet.example\"]\nselect = \"rtt\"\n",
			"agent.toml:5: test[1].select: rtt chooses among one srv:NAME's servers or a list of host[:port], not a list holding srv:fleet.example"},
		{"unknown http key", "[http]\nhost = [\"a\"]\n", "agent.toml:2: http.host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("agent.toml", []byte(tc.doc), testLoad)
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.doc)
			}
			if !strings.HasPrefix(err.Error(), tc.want) && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant %q", err, tc.want)
			}
		})
	}
}

func TestKeyLines(t *testing.T) {
	lines, err := keyLines([]byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]int{
		"tolerance": 2, "retention": 4, "retention.max_age": 5, "test.0": 8, "test.0.every": 12,
		"test.0.select": 13, "test.1.cron": 19, "test.1.options": 20, "test.1.options.test-time": 21, "test.2.options.test-time": 27,
	} {
		if lines[key] != want {
			t.Errorf("%s: line %d, want %d", key, lines[key], want)
		}
	}
}

// TestConfigShortSpacing: a spacing of 1 to 10 minutes is for trying the
// agent: accepted, with a warning naming the line; below 1 minute refused.
func TestConfigShortSpacing(t *testing.T) {
	cfg, err := Parse("agent.toml", []byte("[[test]]\nname = \"a\"\nservers = [\"s\"]\ndirection = \"down\"\nevery = \"2m\"\n"), LoadOptions{Parse: fakeParse})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0], "agent.toml:5: test[1].every: 2m0s: shorter than 10m0s") {
		t.Errorf("warnings %q", cfg.Warnings)
	}
}

// TestConfigKindErrors: a value of the wrong kind is file:line: key: what
// was expected, in the file's terms (the decoder's message named Go's
// types: agent.fileProbe); a duration without a unit is refused (every =
// 600 was 600 ns), and so is a number where a string belongs, naming its
// line too (the decoder hands it to UnmarshalText as "600": textError).
func TestConfigKindErrors(t *testing.T) {
	const test = "[[test]]\nname = \"a\"\nservers = [\"s\"]\ndirection = \"down\"\n"
	for doc, want := range map[string]string{
		test + "every = 600\n":                   `agent.toml:5: test[1].every: 600: a number without a unit: write a string with one ("600s", "10m", "6h", "30d")`,
		"tolerance = 60\n":                       "agent.toml:1: tolerance: 60: a number without a unit",
		test + "every = 1.5\n":                   "agent.toml:5: test[1].every: 1.5: a number without a unit",
		"[crosstraffic]\nwindow = 5\n":           "agent.toml:2: crosstraffic.window: 5: a number without a unit",
		test + "cron = 5\n":                      `agent.toml:5: test[1].cron: cron "5"`,
		"probe = \"x\"\n":                        "agent.toml:1: probe: want a table ([...] or { key = value }), not a TOML string",
		"test = \"x\"\n":                         "agent.toml:1: test: want tables ([[...]]), not a TOML string",
		test + "options = \"x\"\n":               "agent.toml:5: test[1].options: want a table ({ key = value }), not a TOML string",
		"[[test]]\nname = 5\n":                   "agent.toml:2: test[1].name: want a string, not a TOML integer",
		"[http]\nhosts = \"x\"\n":                `agent.toml:2: http.hosts: want an array of strings (["a", "b"]), not a TOML string`,
		test + "options = { test-time = [1] }\n": "agent.toml:5: test[1].options.test-time: want a string, an integer or true/false, not an array",
	} {
		_, err := Parse("agent.toml", []byte(doc), LoadOptions{Parse: fakeParse})
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "agent.file") || strings.Contains(err.Error(), "interface {") {
			t.Errorf("%q: %v, want %s", doc, err, want)
		}
	}
	if _, err := Parse("agent.toml", []byte(test+"every = \"10m\"\n"), LoadOptions{Parse: fakeParse}); err != nil {
		t.Errorf("every = \"10m\": %v", err)
	}
}
