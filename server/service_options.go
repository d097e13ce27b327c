package server

// The server's service options: how it runs (in the background, with a log
// file), what it writes (-G), how it logs, and how much a single source
// may ask of it.

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/udpstp/udpstp/control"
)

// Options are the options of `udpstp server` that concern the
// process rather than the tests it serves.
type Options struct {
	Daemon    bool   // -x: detach from the shell
	LogFile   string // -l: log here (with -x)
	LogSizeKB int    // -k: rotate the log file past this many 1000-byte units
	StatsFile string // -G: performance statistics file name, strftime pattern

	LogFormat   string     // --log-format: "text" or "json"
	LogLevel    slog.Level // --log-level
	LogLevelSet bool       // --log-level was given (else -D means debug)

	SetupRate int // --setup-rate: Setup Requests per second per source; 0 (the default): no limit

	TestPorts     control.PortRange // --test-ports; zero: the kernel's ephemeral range
	PerSource     int               // --max-conns-per-source; 0: control's default
	SourcePrefix6 int               // --source-prefix6; 0: control's default

	MetricsListen string // --metrics-listen: host:port of the Prometheus endpoint; "": none

	// DrainTimeout (--drain-timeout) bounds a drain, from the first
	// SIGTERM to the exit; unset (DrainTimeoutSet false):
	// DefaultDrainTimeout of -t. 0: no drain, SIGTERM stops at once.
	DrainTimeout    time.Duration
	DrainTimeoutSet bool

	// The key sources, kept for a reload on SIGHUP: -a and the -K path.
	AuthKey string
	KeyFile string

	Archive ArchiveOptions // --archive, --store and theirs (archive.go)
}

// Defaults of the service options.
const (
	defaultLogSizeKB = 1000
	// defaultSetupRate is no limit: a rate that bites floods also refused
	// ten OB-UDPST clients of 8 connections starting together behind one
	// address. The server's own bounds (pending Test Connections per
	// source and in all, the refusal answer budget; docs/security.md)
	// never refuse ordinary use.
	defaultSetupRate = 0
	// minSetupBurst lets a multi-connection client's Setup Requests (up to
	// 24 at once, OB-UDPST's -C maximum) through twice over.
	minSetupBurst = 2 * control.MaxConnsPerClient
)

// drainTimeout is the drain's bound for a server granting tests of up to
// maxTestTime seconds.
func (so *Options) drainTimeout(maxTestTime int) time.Duration {
	if so.DrainTimeoutSet {
		return so.DrainTimeout
	}
	return DefaultDrainTimeout(maxTestTime)
}

// SetupBurst is the burst the per-source limiter allows at rate.
func SetupBurst(rate int) int { return max(rate, minSetupBurst) }

// DefaultOptions are the service options of a bare `udpstp server`.
func DefaultOptions() Options {
	return Options{LogSizeKB: defaultLogSizeKB, LogFormat: "text", LogLevel: slog.LevelInfo, SetupRate: defaultSetupRate}
}

// ParseLogLevel reads debug, info, warn (warning) or error, any case.
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q", s)
}

// absPaths makes the file options absolute, so that a server that changed
// its directory (a daemon moves to /, as OB-UDPST's does) still finds them
// where the command line meant. (OB-UDPST resolves them against / after
// its chdir; a relative -G then lands in /.)
func (so *Options) absPaths() error {
	for _, p := range []*string{&so.LogFile, &so.StatsFile, &so.KeyFile, &so.Archive.Dir, &so.Archive.KeyFile} {
		if *p == "" {
			continue
		}
		a, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = a
	}
	// A SQLite store is a file too (the archive's --store).
	if path, ok := strings.CutPrefix(so.Archive.Store, "sqlite:"); ok && path != "" && !filepath.IsAbs(path) {
		a, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		so.Archive.Store = "sqlite:" + a
	}
	return nil
}
