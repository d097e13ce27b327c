//go:build linux

package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/server"
)

// TestServiceOptions maps the service options onto localOptions.Service.
func TestServiceOptions(t *testing.T) {
	_, lo := mustServer(t)
	if so := lo.Service; so.LogSizeKB != 1000 || so.LogFormat != "text" || so.LogLevel != slog.LevelInfo || so.SetupRate != server.DefaultOptions().SetupRate || so.Daemon {
		t.Errorf("defaults: %+v", so)
	}
	_, lo = mustServer(t, "-x", "-l", "srv.log", "-k", "50", "-G", "s_%H.json", "--log-format", "JSON", "--log-level", "warning",
		"--setup-rate", "0", "-K", writeFile(t, "1,k\n"), "-a", "single")
	so := lo.Service
	if !so.Daemon || so.LogFile != "srv.log" || so.LogSizeKB != 50 || so.StatsFile != "s_%H.json" || so.LogFormat != "json" ||
		so.LogLevel != slog.LevelWarn || !so.LogLevelSet || so.SetupRate != 0 || so.AuthKey != "single" || so.KeyFile == "" {
		t.Errorf("all set: %+v", so)
	}
	_, lo = mustServer(t, "--test-ports", "40000-40999", "--max-conns-per-source", "64", "--source-prefix6", "64")
	if so := lo.Service; so.TestPorts != (control.PortRange{Lo: 40000, Hi: 40999}) || so.PerSource != 64 || so.SourcePrefix6 != 64 {
		t.Errorf("admission options: %+v", so)
	}
	for arg, want := range map[string]time.Duration{"90s": 90 * time.Second, "0": 0, "1.5": 1500 * time.Millisecond, "1h": time.Hour} {
		_, lo = mustServer(t, "--drain-timeout", arg)
		if so := lo.Service; !so.DrainTimeoutSet || so.DrainTimeout != want {
			t.Errorf("--drain-timeout %s: %v (set %v), want %v", arg, so.DrainTimeout, so.DrainTimeoutSet, want)
		}
	}
	for _, bad := range []string{"-1s", "2d", "x", "86401"} {
		mustFail(t, 50, []string{"server", "--drain-timeout", bad}, "--drain-timeout")
	}
	_, lo = mustServer(t, "--archive", "arc", "--store", "sqlite:x.db", "--archive-key", "k", "--archive-addresses", "PLAIN",
		"--archive-max-size", "2", "--archive-max-age", "10m", "--archive-retention", "720h", "--archive-name", "n")
	if a := lo.Service.Archive; a != (server.ArchiveOptions{Dir: "arc", Store: "sqlite:x.db", KeyFile: "k", Plain: true,
		MaxSizeMB: 2, MaxAge: 10 * time.Minute, Retention: 720 * time.Hour, Name: "n"}) {
		t.Errorf("archive options: %+v", a)
	}
	for _, bad := range [][]string{
		{"--archive", "a", "--archive-addresses", "hashed"}, {"--archive", "a", "--archive-max-age", "0"},
		{"--archive", "a", "--archive-retention", "-1h"}, {"--archive-key", "k"}, {"--archive", ""},
	} {
		if r := run(t, append([]string{"server"}, bad...)...); r.code == 0 || r.server != nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
