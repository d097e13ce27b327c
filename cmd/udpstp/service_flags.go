package main

// The server's service options as its command line gives them
// (server.Options).

import (
	"net"
	"strings"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/server"
)

// serviceOpts reads the service options of a server command line.
func serviceOpts(v optionValues) (server.Options, error) {
	so := server.DefaultOptions()
	so.Daemon = v.on("daemon")
	so.LogFile = v.text("log-file")
	so.StatsFile = v.text("stats-file")
	so.AuthKey = v.text("auth-key")
	so.KeyFile = v.text("key-file")
	err := v.numbers([]numberField{
		{"log-size", &so.LogSizeKB},
		{"setup-rate", &so.SetupRate},
		{"max-conns-per-source", &so.PerSource},
		{"source-prefix6", &so.SourcePrefix6},
	})
	if err != nil {
		return so, err
	}
	if v.set("test-ports") {
		if so.TestPorts, err = control.ParsePortRange(v.text("test-ports")); err != nil {
			return so, configError("ERROR: %v for %s", err, opt("test-ports"))
		}
	}
	if v.set("drain-timeout") {
		if so.DrainTimeout, err = parseDuration("drain-timeout", v.text("drain-timeout")); err != nil {
			return so, err
		}
		so.DrainTimeoutSet = true
	}
	if so.MetricsListen, err = metricsListen(v); err != nil {
		return so, err
	}
	if so.Archive, err = archiveOpts(v); err != nil {
		return so, err
	}
	if v.set("stats-file") && so.StatsFile == "" {
		return so, configError("ERROR: %s needs a file name", opt("stats-file"))
	}
	if v.set("log-file") && so.LogFile == "" {
		return so, configError("ERROR: %s needs a file name", opt("log-file"))
	}
	if v.set("log-format") {
		switch f := strings.ToLower(v.text("log-format")); f {
		case "text", "json":
			so.LogFormat = f
		default:
			return so, configError("ERROR: '%s' is not a valid log format for %s (text or json)", v.text("log-format"), opt("log-format"))
		}
	}
	if v.set("log-level") {
		l, err := server.ParseLogLevel(v.text("log-level"))
		if err != nil {
			return so, configError("ERROR: '%s' is not a valid log level for %s (debug, info, warn or error)", v.text("log-level"), opt("log-level"))
		}
		so.LogLevel, so.LogLevelSet = l, true
	}
	return so, nil
}

// metricsListen reads --metrics-listen: host:port with both given (an
// IPv6 address in brackets); 0.0.0.0 or [::] is every address, which
// has to be asked for by name.
func metricsListen(v optionValues) (string, error) {
	if !v.set("metrics-listen") {
		return "", nil
	}
	a := v.text("metrics-listen")
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return "", configError("ERROR: '%s' is not an ADDR:PORT for %s (e.g. 192.0.2.1:24602, [2001:db8::1]:24602)", a, opt("metrics-listen"))
	}
	if _, err := parseDecimal(opt("metrics-listen").String()+" port", port, 1, maxPort); err != nil {
		return "", err
	}
	return a, nil
}

// archiveOpts reads --archive, --store and the options that go with them.
func archiveOpts(v optionValues) (server.ArchiveOptions, error) {
	a := server.ArchiveOptions{
		Dir: v.text("archive"), Store: v.text("store"), KeyFile: v.text("archive-key"), Name: v.text("archive-name"),
	}
	for _, name := range []string{"archive", "store", "archive-key"} {
		if v.set(name) && v.text(name) == "" {
			return a, configError("ERROR: %s needs a value", opt(name))
		}
	}
	if err := v.number("archive-max-size", &a.MaxSizeMB); err != nil {
		return a, err
	}
	if v.set("archive-addresses") {
		switch w := strings.ToLower(v.text("archive-addresses")); w {
		case "pseudonym", "plain":
			a.Plain = w == "plain"
		default:
			return a, configError("ERROR: '%s' is not a valid value for %s (pseudonym or plain)", v.text("archive-addresses"), opt("archive-addresses"))
		}
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"archive-max-age", &a.MaxAge}, {"archive-retention", &a.Retention}} {
		if !v.set(d.name) {
			continue
		}
		t, err := time.ParseDuration(v.text(d.name))
		if err != nil || t < 0 || (d.name == "archive-max-age" && t == 0) {
			return a, configError("ERROR: '%s' is not a valid duration for %s (1h, 10m, 30s)", v.text(d.name), opt(d.name))
		}
		*d.dst = t
	}
	if a.Dir == "" && a.Store == "" {
		for _, name := range []string{"archive-key", "archive-addresses", "archive-max-size", "archive-max-age", "archive-retention", "archive-name"} {
			if v.set(name) {
				return a, configError("ERROR: %s needs %s or %s", opt(name), opt("archive"), opt("store"))
			}
		}
	}
	return a, nil
}
