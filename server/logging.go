package server

// The server's log: log/slog lines in text or JSON, on standard error or,
// in the background (-x), in the -l log file, which is renamed to
// <file>.old once -k thousand bytes have been written to it, as OB-UDPST's
// is.
//
// Under systemd, standard error is a stream to journald, which stamps
// every line itself and reads a "<N>" prefix as the line's syslog
// priority (SyslogLevelPrefix=yes, the default). There, lines carry no
// time of their own and start with their priority, so `journalctl -p
// warning` shows exactly the warnings and nothing is stamped twice.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/udpstp/udpstp/internal/atomicfile"
)

// logOutput says where the server's log goes.
type logOutput struct {
	w       io.Writer // nil: discard
	journal bool      // w is journald's stream: no time, <N> priorities
	closer  io.Closer // the log file, if one was opened
}

// serviceLogOutput picks the log's destination: the -l file in a daemon,
// nothing in a daemon without one (OB-UDPST discards everything then),
// standard error otherwise.
// stderr is the process's standard error (Config.Stderr), journal says
// that it is journald's stream (Config.Journal).
func serviceLogOutput(so Options, daemonChild bool, stderr io.Writer, journal bool) (logOutput, error) {
	if daemonChild || so.Daemon {
		if so.LogFile == "" {
			return logOutput{}, nil
		}
		f, err := openRotating(so.LogFile, int64(so.LogSizeKB)*1000)
		if err != nil {
			return logOutput{}, err
		}
		return logOutput{w: f, closer: f}, nil
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	return logOutput{w: stderr, journal: journal}, nil
}

// newServiceLogger builds the logger for out in format ("text" or "json")
// at level.
func newServiceLogger(out logOutput, format string, level slog.Leveler) *slog.Logger {
	if out.w == nil {
		return slog.New(slog.DiscardHandler)
	}
	opts := &slog.HandlerOptions{Level: level}
	w := out.w
	var pw *priorityWriter
	if out.journal {
		opts.ReplaceAttr = dropTime
		pw = &priorityWriter{w: w}
		w = pw
	}
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	if pw != nil {
		h = &priorityHandler{Handler: h, w: pw}
	}
	return slog.New(h)
}

var (
	_ slog.Handler   = (*priorityHandler)(nil)
	_ io.WriteCloser = (*rotatingFile)(nil)
)

// dropTime removes the record's own time: journald has stamped it.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// priorityWriter puts a syslog priority prefix in front of each line a
// handler writes; priorityHandler sets it per record. slog's built-in
// handlers write one record with one Write call.
type priorityWriter struct {
	mu     sync.Mutex // held by priorityHandler.Handle across the record
	w      io.Writer
	prefix string
}

func (p *priorityWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

// priorityHandler wraps a handler that writes to a priorityWriter.
type priorityHandler struct {
	slog.Handler
	w *priorityWriter
}

func (h *priorityHandler) Handle(ctx context.Context, r slog.Record) error {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	h.w.prefix = syslogPriority(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h *priorityHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &priorityHandler{Handler: h.Handler.WithAttrs(as), w: h.w}
}

func (h *priorityHandler) WithGroup(name string) slog.Handler {
	return &priorityHandler{Handler: h.Handler.WithGroup(name), w: h.w}
}

// syslogPriority is the sd-daemon(3) prefix for a slog level.
func syslogPriority(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "<3>" // SD_ERR
	case l >= slog.LevelWarn:
		return "<4>" // SD_WARNING
	case l >= slog.LevelInfo:
		return "<6>" // SD_INFO
	}
	return "<7>" // SD_DEBUG
}

// rotatingFile is OB-UDPST's -l log file with its -k limit: appended to;
// once the bytes written to it (counting what it held when opened) exceed
// the limit, it is renamed to <path>.old, replacing an older one, and a new
// file is started.
type rotatingFile struct {
	mu      sync.Mutex
	path    string
	limit   int64
	f       *os.File
	written int64
}

// openRotating opens (appending, creating) the log file at path.
func openRotating(path string, limit int64) (*rotatingFile, error) {
	r := &rotatingFile{path: path, limit: limit}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rotatingFile) open() error {
	f, err := openLogFile(r.path)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.written = f, st.Size()
	return nil
}

func (r *rotatingFile) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, os.ErrClosed
	}
	n, err := r.f.Write(b)
	r.written += int64(n)
	if r.written > r.limit {
		r.rotate()
	}
	return n, err
}

// rotate renames the file to .old and starts a new one. If that fails the
// log goes on in the file it has (a full disk must not stop the server);
// the next write tries again.
func (r *rotatingFile) rotate() {
	if err := os.Rename(r.path, r.path+".old"); err != nil {
		return
	}
	old := r.f
	if err := r.open(); err != nil {
		r.f = old // still open, now as .old
		return
	}
	old.Close()
}

func (r *rotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// openLogFile opens the -l log file at path for appending, creating it;
// a link, FIFO or another user's file in a sticky directory at the name
// is refused (atomicfile.Append).
func openLogFile(path string) (*os.File, error) {
	return atomicfile.Append(path, 0o640)
}

// fopenError reports a file named by option (-l, -G) that cannot be
// opened: one line, as OB-UDPST's, and status ExitInit.
func fopenError(o option, err error) error {
	return exitError(fmt.Sprintf("FOPEN ERROR: %v (%s)", err, o), ExitInit)
}
