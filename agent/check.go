package agent

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/discover"

	"github.com/pelletier/go-toml/v2"
)

// configChecker resolves a decoded file, naming the line of what it refuses.
type configChecker struct {
	path  string
	lines map[string]int
	o     LoadOptions
	// warnings are what the file asks that works but is unwise
	// (Config.Warnings).
	warnings []string
}

// errorAt is an error at key (a keyLines path): file:line: key: why.
func (c *configChecker) errorAt(key, format string, a ...any) error {
	l, k := c.lines[key], key
	for l == 0 && strings.Contains(k, ".") { // an absent key: its table's line
		k = k[:strings.LastIndex(k, ".")]
		l = c.lines[k]
	}
	return fmt.Errorf("%s:%d: %s: %s", c.path, l, displayKey(key), fmt.Sprintf(format, a...))
}

// displayKey writes an array element as people count it: test[2].every
// for the second [[test]].
var indexRe = regexp.MustCompile(`\.([0-9]+)(\.|$)`)

func displayKey(key string) string {
	return indexRe.ReplaceAllStringFunc(key, func(m string) string {
		sub := indexRe.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[1])
		return "[" + strconv.Itoa(n+1) + "]" + sub[2]
	})
}

// testNameRe: names become metric labels and URL paths.
var testNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func (c *configChecker) resolve(f *fileConfig) (*Config, error) {
	cfg := Default()
	cfg.Path = c.path
	if f.Tolerance.D() > 0 {
		cfg.Tolerance = f.Tolerance.D()
	}
	cfg.Retention.MaxAge = f.Retention.MaxAge.D()
	if f.Retention.MaxCount < 0 {
		return nil, c.errorAt("retention.max_count", "must be 0 (keep all) or more")
	}
	cfg.Retention.MaxCount = f.Retention.MaxCount
	if f.Probe.MaxDuration.D() > 0 {
		d := f.Probe.MaxDuration.D()
		if d < time.Duration(control.MinTestIntTime)*time.Second || d > time.Duration(control.MaxTestIntTime)*time.Second {
			return nil, c.errorAt("probe.max_duration", "%s: want %d s to %d s", d, control.MinTestIntTime, control.MaxTestIntTime)
		}
		cfg.ProbeMax = d
	}
	if f.Probe.MinInterval.D() > 0 {
		cfg.ProbeInterval = f.Probe.MinInterval.D()
	}
	if err := c.resolveHTTP(f, cfg); err != nil {
		return nil, err
	}
	if err := c.resolveCross(&f.Cross, cfg); err != nil {
		return nil, err
	}
	if len(f.Tests) > MaxTests {
		return nil, c.errorAt("test", "%d tests: at most %d", len(f.Tests), MaxTests)
	}
	names := map[string]bool{}
	for i := range f.Tests {
		t, err := c.test(fmt.Sprintf("test.%d", i), &f.Tests[i])
		if err != nil {
			return nil, err
		}
		if names[t.Name] {
			return nil, c.errorAt(fmt.Sprintf("test.%d.name", i), "%q: another test has that name", t.Name)
		}
		names[t.Name] = true
		cfg.Tests = append(cfg.Tests, t)
	}
	cfg.Warnings = c.warnings
	return cfg, nil
}

func (c *configChecker) test(key string, ft *fileTest) (*Test, error) {
	t := &Test{Name: ft.Name, Direction: ft.Direction}
	var err error
	if !testNameRe.MatchString(ft.Name) {
		return nil, c.errorAt(key+".name", "%q: want 1 to 64 letters, digits, '.', '_' or '-'", ft.Name)
	}
	switch t.Direction {
	case DirUp, DirDown, DirBoth, DirBidirectional:
	case "":
		return nil, c.errorAt(key+".direction", "missing: want up, down, both or bidirectional")
	default:
		return nil, c.errorAt(key+".direction", "direction %q: want up, down, both or bidirectional", t.Direction)
	}
	if len(ft.Servers) == 0 {
		return nil, c.errorAt(key+".servers", "missing: want at least one host[:port]")
	}
	switch {
	case ft.Every.D() > 0 && ft.Cron.c != nil:
		return nil, c.errorAt(key+".cron", "a test has every or cron, not both")
	case ft.Cron.c != nil:
		d, ok := ft.Cron.c.constantDelay()
		if ok && d < c.o.MinEvery {
			return nil, c.errorAt(key+".cron", "%q: more often than every %s", ft.Cron.c.Spec, c.o.MinEvery)
		}
		if ok && d < AdviseEvery {
			c.warnings = append(c.warnings, c.errorAt(key+".cron", "%q: more often than every %s: for trying the agent; the probe then measures mostly its own load", ft.Cron.c.Spec, AdviseEvery).Error())
		}
		t.Schedule = ft.Cron.c
	case ft.Every.D() > 0:
		if ft.Every.D() < c.o.MinEvery {
			return nil, c.errorAt(key+".every", "%s: at least %s", ft.Every.D(), c.o.MinEvery)
		}
		if ft.Every.D() < AdviseEvery {
			c.warnings = append(c.warnings, c.errorAt(key+".every", "%s: shorter than %s: for trying the agent; the probe then measures mostly its own load", ft.Every.D(), AdviseEvery).Error())
		}
		t.Schedule = Every{Mean: ft.Every.D()}
	default:
		t.Schedule = Every{Mean: DefaultEvery}
	}
	if t.Select, err = client.ParseSelect(ft.Select); err != nil {
		return nil, c.errorAt(key+".select", "%v", err)
	}
	if t.Select == client.SelectRTT && len(ft.Servers) > 1 {
		for _, s := range ft.Servers {
			if discover.Is(s) {
				return nil, c.errorAt(key+".select", "rtt chooses among one srv:NAME's servers or a list of host[:port], not a list holding %s", s)
			}
		}
	}
	args, err := c.optionArgs(key+".options", ft.Options)
	if err != nil {
		return nil, err
	}
	switch t.Direction {
	case DirUp:
		args = append(args, "--upstream")
	case DirDown, DirBoth: // both: the upstream half is a copy
		args = append(args, "--downstream")
	case DirBidirectional:
		args = append(args, "--bidirectional")
	}
	for i, s := range ft.Servers {
		// Each server is parsed alone: failover tries them one by one.
		cc, plan, err := c.o.Parse(append(args, "--", s))
		if err != nil {
			return nil, c.optionError(key, ft.Options, fmt.Sprintf("%s.servers", key), i, err)
		}
		t.Servers = append(t.Servers, cc.Servers[0])
		if i == 0 {
			t.Client, t.Plan = cc, plan
		}
	}
	return t, nil
}

// agentOwned are the client's options the agent sets itself: the
// direction, and where the result goes.
var agentOwned = map[string]string{
	"upstream": "direction", "downstream": "direction", "bidirectional": "direction",
	"format": "the agent stores JSON", "output": "results go to the store", "textfile": "the agent has /metrics",
	"json-stream": "the page shows the events", "progress": "the agent has no terminal", "verbose": "the agent stores JSON",
	"debug": "the agent stores JSON", "export": "the agent writes no files", "repeat": "schedule the test instead",
	"pause": "schedule the test instead", "show-rates": "not a test", "log-level": "not a test option", "no-gso": "the agent picks its sockets",
}

// optionArgs turns the options table into the client's command-line
// arguments, in key order.
func (c *configChecker) optionArgs(key string, opts map[string]any) ([]string, error) {
	names := make([]string, 0, len(opts))
	for k := range opts {
		names = append(names, k)
	}
	sort.Strings(names)
	var args []string
	for _, k := range names {
		if why, ok := agentOwned[k]; ok {
			return nil, c.errorAt(key+"."+k, "not an option of an agent's test (%s)", why)
		}
		if !optionNameRe.MatchString(k) {
			return nil, c.errorAt(key+"."+k, "not an option of udpstp client (its long names: test-time, connections, ...)")
		}
		switch v := opts[k].(type) {
		case bool:
			if v {
				args = append(args, "--"+k)
			}
		case int64:
			args = append(args, "--"+k, strconv.FormatInt(v, 10))
		case string:
			args = append(args, "--"+k, v)
		default:
			return nil, c.errorAt(key+"."+k, "want a string, an integer or true/false, not %s", tomlKind(v))
		}
	}
	return args, nil
}

var optionNameRe = regexp.MustCompile(`^[a-z][a-z0-9-]+$`)

// optionError places the client parser's message: on the option it names
// (it names the option as --name or --name/-x), else on the server or the
// options table.
func (c *configChecker) optionError(key string, opts map[string]any, serversKey string, _ int, err error) error {
	msg := strings.TrimSpace(strings.TrimPrefix(err.Error(), "ERROR: "))
	// The first option the message names (a cross-check names two).
	first, at := "", len(msg)
	for k := range opts {
		for _, form := range []string{"--" + k + "/", "--" + k + ")", "--" + k + " ", "--" + k + ","} {
			if i := strings.Index(msg, form); i >= 0 && i < at {
				first, at = k, i
			}
		}
		if strings.HasSuffix(msg, "--"+k) && len(msg)-len(k)-2 < at {
			first, at = k, len(msg)-len(k)-2
		}
	}
	if first != "" {
		return c.errorAt(key+".options."+first, "%s", msg)
	}
	if strings.Contains(msg, "host") || strings.Contains(msg, "port") || strings.Contains(msg, "address") {
		return c.errorAt(serversKey, "%s", msg)
	}
	return c.errorAt(key+".options", "%s", msg)
}

// tomlKind names the TOML kind of a decoded value, not Go's type.
func tomlKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case float64:
		return "a float"
	case time.Time, toml.LocalDate, toml.LocalDateTime, toml.LocalTime:
		return "a date or time"
	}
	return "another kind of value"
}
