package main

// The client's options around OB-UDPST's report: -O, -E and -M, which
// OB-UDPST has, and our --json-stream and --progress; and the observers
// of a run they ask for.

import (
	"io"
	"log/slog"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/udpstp/udpstp/client"
	"github.com/udpstp/udpstp/control"
)

// Values of --progress.
const (
	progressAuto   = "auto"
	progressAlways = "always"
	progressNever  = "never"
)

// maxIfNameLen is the longest interface name Linux takes (IFNAMSIZ - 1).
const maxIfNameLen = 15

// clientUXOptions reads -O, -E, -M, --json-stream, --progress and
// --extensions.
// --json-stream implies JSON output, as iperf3's does: -f json or jsonb
// choose the end document's form; jsonf, a document over many lines, is
// refused, since the stream is one object per line.
func clientUXOptions(v optionValues, cfg *control.ClientConfig, lo *localOptions) error {
	if v.set("export") {
		name, all := strings.CutPrefix(v.text("export"), "+")
		if name == "" {
			return configError("ERROR: %s needs a file name", opt("export"))
		}
		cfg.ExportFile, cfg.ExportAll = name, all
	}
	if v.set("interface") {
		intf := v.text("interface")
		if intf == "" || len(intf) > maxIfNameLen || strings.ContainsAny(intf, "/ \t\n\x00") || intf == "." || intf == ".." {
			return configError("ERROR: '%s' is not a valid interface name (%s)", intf, opt("interface"))
		}
		cfg.Interface = intf
	}
	cfg.InterfaceMax = v.on("interface-max")
	if lo.Stream = v.on("json-stream"); lo.Stream {
		switch cfg.Format {
		case "":
			cfg.Format = "json"
		case "jsonf":
			return configError("ERROR: %s writes one object per line: not with %s jsonf (json or jsonb)", opt("json-stream"), opt("format"))
		}
	}
	cfg.Extensions = v.on("extensions")
	if v.set("progress") { // unset ("") is auto
		switch p := strings.ToLower(v.text("progress")); p {
		case progressAuto, progressAlways, progressNever:
			lo.Progress = p
		default:
			return configError("ERROR: '%s' is not a valid progress setting (%s: auto, always or never)", v.text("progress"), opt("progress"))
		}
	}
	return nil
}

// clientUX is what a run writes to, and who observes it.
type clientUX struct {
	out, stderr io.Writer
	observe     func(client.Event)
	log         *slog.Logger // the engine's warnings
	stream      *client.Stream
}

// wantProgress decides --progress: auto draws only on a terminal, for the
// text report without -s (JSON is for programs; -s asks for quiet).
func wantProgress(cfg *control.ClientConfig, lo localOptions, stderrTerminal bool) bool {
	switch lo.Progress { // "": auto
	case progressAlways:
		return true
	case progressNever:
		return false
	}
	return stderrTerminal && cfg.Format == "" && !cfg.NoSubInt && !lo.Stream
}

// newClientUX sets up the progress line and the stream a run asks for.
func newClientUX(cfg *control.ClientConfig, lo localOptions, stdout, stderr *os.File) clientUX {
	ux := clientUX{out: stdout, stderr: stderr}
	var observers []func(client.Event)
	fd := int(stderr.Fd())
	if wantProgress(cfg, lo, term.IsTerminal(fd)) {
		width := func() int {
			w, _, err := term.GetSize(fd)
			if err != nil {
				return 0
			}
			return w
		}
		p := client.NewProgress(stderr, width, max(cfg.ConnMax, len(cfg.Servers), 1))
		ux.out, ux.stderr = p.Writer(stdout), p.Writer(stderr)
		observers = append(observers, p.Observe)
	}
	if lo.Stream {
		ux.stream = client.NewStream(ux.out, lo.Plan)
		ux.out = io.Discard // the end event carries the document
		observers = append(observers, ux.stream.Observe)
	}
	if cfg.Format == "" && !lo.Stream && !sameFile(stdout, stderr) {
		observers = append(observers, errorsTo(ux.stderr))
	}
	ux.log = slog.New(slog.NewTextHandler(ux.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if len(observers) > 0 {
		ux.observe = func(ev client.Event) {
			for _, o := range observers {
				o(ev)
			}
		}
	}
	return ux
}

// errorsTo copies the text report's warnings and errors to w. OB-UDPST
// writes them into the report on standard output, which keeps them there
// (interop: its text is byte for byte OB-UDPST's); on standard error too,
// a terminal shows why a test failed while the report goes to a file.
// ALERT lines (Code -1) set no status and stay in the report only.
func errorsTo(w io.Writer) func(client.Event) {
	return func(ev client.Event) {
		if ev.Kind == client.EventError || ev.Kind == client.EventWarning && ev.Code >= 0 {
			io.WriteString(w, "udpstp: "+strings.TrimSuffix(ev.Text, "\n")+"\n")
		}
	}
}

// sameFile reports whether a and b are one file (both the terminal, or
// 2>&1), where a copy of a report line on b would show twice.
func sameFile(a, b *os.File) bool {
	ai, err := a.Stat()
	if err != nil {
		return false
	}
	bi, err := b.Stat()
	return err == nil && os.SameFile(ai, bi)
}
