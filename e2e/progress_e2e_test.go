package e2e

// --progress end to end: the client in a pseudo-terminal, as a user runs
// it, and on a real terminal emulator (tmux) for what the screen keeps.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/report"
)

// progressMark is a part of every progress line once the test runs
// ("2.5 s, 7.5 s left"); before, the line says progressStart.
const (
	progressStart = "udpstp: connecting..."
	progressMark  = " s left"
)

// obudpstLine matches each line of OB-UDPST's text report of a plain
// downstream test: nothing else may reach the screen.
var obudpstLine = regexp.MustCompile(`^(UDP Speed Test|Software Ver: .*|Mode: Client, .*|` +
	`Downstream Test Int\(sec\): .*|  ID: \d+, SR Index: .*|Sub-Interval\[\d+\]\(sec\): .*|` +
	`Downstream (Summary|Minimum|Maximum) .*)$`)

// fineLine is udpstp's own line after each Sub-Interval line of a
// downstream client, the delay variations to the µs, and after the
// minimum line, the minima to the µs (report/fine.go).
var fineLine = regexp.MustCompile(`^(Sub-Interval\[\d+\] to the microsecond: OWDVar\(ms\): [0-9./]+, RTTVar\(ms\): [0-9./]+|` +
	`Downstream Minimum to the microsecond: One-Way Delay\(ms\): .*)$`)

// withoutFine drops fineLine's lines, counting them.
func withoutFine(lines []string) (rest []string, fine int) {
	for _, l := range lines {
		if fineLine.MatchString(l) {
			fine++
			continue
		}
		rest = append(rest, l)
	}
	return rest, fine
}

// ptyRead is what a reader of a pseudo-terminal's master saw, with the
// time each chunk arrived.
type ptyRead struct {
	mu     sync.Mutex
	data   bytes.Buffer
	chunks []ptyChunk
	done   chan struct{} // closed once the terminal's side is closed by all (EIO)
}

type ptyChunk struct {
	at  time.Time
	end int // data's length after the chunk
}

func (r *ptyRead) read(f *os.File) {
	defer close(r.done)
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			r.mu.Lock()
			r.data.Write(buf[:n])
			r.chunks = append(r.chunks, ptyChunk{time.Now(), r.data.Len()})
			r.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// wait waits until the last bytes came through the terminal.
func (r *ptyRead) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(await.Deadline):
		t.Fatalf("the terminal still open %v after the client ended", await.Deadline)
	}
}

// firstAt is when s first appeared in the output (zero if never).
func (r *ptyRead) firstAt(s string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := bytes.Index(r.data.Bytes(), []byte(s))
	if i < 0 {
		return time.Time{}
	}
	for _, c := range r.chunks {
		if c.end > i {
			return c.at
		}
	}
	return time.Time{}
}

// progressSeq is one drawing or erasing of the progress line.
var progressSeq = regexp.MustCompile("\r[^\r\n]*\x1b\\[K")

// TestProgressOnTerminal: with standard output and error on one
// pseudo-terminal, the line is there within half a second of the
// client's first output (before any Sub-Interval line), it is redrawn
// during the test, and what remains without its sequences is exactly
// OB-UDPST's text; with standard error in a file, not a byte of it
// anywhere.
func TestProgressOnTerminal(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	args := []string{"client", "-d", "-t", "5", "-p", fmt.Sprint(port), "127.0.0.1"}

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 200})
	cmd := exec.Command(udpstpBin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	r := ptyRead{done: make(chan struct{})}
	go r.read(ptmx)
	began := time.Now()
	c := start(t, cmd, procOpts{name: "udpstp client"})
	tty.Close()
	if code := c.exit(t, 60*time.Second); code != 0 {
		t.Fatalf("client: exit %d", code)
	}
	r.wait(t)
	r.mu.Lock()
	raw := r.data.String()
	r.mu.Unlock()

	banner, line, sub := r.firstAt("UDP Speed Test"), r.firstAt(progressStart), r.firstAt("Sub-Interval[1]")
	switch {
	case banner.IsZero() || line.IsZero() || sub.IsZero():
		t.Fatalf("banner %v, progress line %v, Sub-Interval %v in %q", banner, line, sub, raw)
	case line.Sub(banner) > 500*time.Millisecond:
		t.Errorf("the progress line came %v after the banner (%v after the start)", line.Sub(banner), line.Sub(began))
	case !line.Before(sub):
		t.Errorf("the progress line came after the first Sub-Interval line")
	}
	if n := strings.Count(raw, progressMark); n < 5 {
		t.Errorf("the line was drawn %d times during a 5 s test", n)
	}
	text := progressSeq.ReplaceAllString(strings.ReplaceAll(raw, "\r\n", "\n"), "")
	// A search still rising at the end of this short loopback test adds
	// udpstp's note after the Maximum (rising_e2e_test.go judges it).
	text = strings.Replace(text, report.StillRisingNote+"\n", "", 1)
	lines, fine := withoutFine(strings.Split(strings.TrimSuffix(text, "\n"), "\n"))
	// banner 3, header 2, 5 Sub-Intervals (and ours to the µs), Summary,
	// Minimum (and ours to the µs), Maximum
	if len(lines) != 13 || fine != 6 {
		t.Errorf("%d lines left without the progress line:\n%s", len(lines), text)
	}
	for _, l := range lines {
		if !obudpstLine.MatchString(l) {
			t.Errorf("not OB-UDPST's text: %q", l)
		}
	}
	t.Logf("progress line %v after the banner, %v after the start", line.Sub(banner), line.Sub(began))

	// Standard error in a file, standard output still the terminal: auto
	// draws nothing, neither there nor on standard output.
	ptmx2, tty2, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx2.Close()
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd = exec.Command(udpstpBin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty2, tty2, errFile
	r2 := ptyRead{done: make(chan struct{})}
	go r2.read(ptmx2)
	c = start(t, cmd, procOpts{name: "udpstp client"})
	tty2.Close()
	if code := c.exit(t, 60*time.Second); code != 0 {
		t.Fatalf("client: exit %d", code)
	}
	r2.wait(t)
	errs, _ := os.ReadFile(errFile.Name())
	r2.mu.Lock()
	out := r2.data.String()
	r2.mu.Unlock()
	if len(errs) != 0 {
		t.Errorf("standard error (a file) got %q", errs)
	}
	if strings.Contains(out, "\x1b[K") || strings.Contains(out, progressMark) || strings.Contains(out, progressStart) {
		t.Errorf("progress bytes on standard output: %q", out)
	}
	if !strings.Contains(out, "Downstream Maximum") {
		t.Errorf("no report: %q", out)
	}
}

// TestProgressScreen: on a real terminal emulator, the line shows during
// the test and the screen that remains is the report alone.
func TestProgressScreen(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not installed")
	}
	e2e(t)
	port := freePort(t, "127.0.0.1")
	srv := spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	defer func() {
		if t.Failed() {
			t.Logf("the server's log:\n%s", srv.log())
		}
	}()
	sock := fmt.Sprintf("udpstp-test-%d", os.Getpid())
	tm := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-L", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { tm("kill-server") })
	// A fixed row of 20 Mbit/s: the screen is what is judged, and a search
	// that ramps loopback to hundreds of Mbit/s lost whole seconds of
	// traffic on a loaded machine (warnings on the screen, once the
	// watchdog's end).
	script := fmt.Sprintf("%s client -d -I 20 -t 5 -p %d 127.0.0.1; echo udpstp-exit=$?; sleep 120", udpstpBin, port)
	if out, err := tm("new-session", "-d", "-s", "p", "-x", "200", "-y", "50", "sh", "-c", script); err != nil {
		t.Skipf("tmux cannot start a session here: %v %s", err, out)
	}
	var during, final string
	deadline := time.Now().Add(60 * time.Second) // a hung client only
	for time.Now().Before(deadline) {
		screen, err := tm("capture-pane", "-p", "-t", "p")
		if err != nil {
			t.Fatalf("capture-pane: %v %s", err, screen)
		}
		if during == "" && strings.Contains(screen, progressMark) {
			during = screen
		}
		if strings.Contains(screen, "udpstp-exit=") {
			final = screen
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if final == "" {
		t.Fatal("the client did not end")
	}
	if during == "" {
		t.Error("the progress line was never on the screen")
	}
	report, exit, _ := strings.Cut(final, "udpstp-exit=")
	lines := strings.Split(strings.TrimRight(report, "\n"), "\n")
	// A loaded machine may stall both ends for a second (in loaded runs
	// of make test, the client and the server each warned that traffic had
	// stopped, at 20 Mbit/s on loopback): OB-UDPST's warning lines, and
	// its warning exit status, are then part of the report, and the stall
	// may cost a Sub-Interval (the receiver's Sub-Intervals begin with its
	// first Load PDU). What is judged is that the screen holds the report
	// alone: the banner, the Sub-Interval lines, the three summary lines.
	var rest []string
	warned, subs := false, 0
	lines, _ = withoutFine(lines)
	for _, l := range lines {
		switch {
		case trafficWarning.MatchString(l):
			warned = true
			continue
		case strings.HasPrefix(l, "Sub-Interval["):
			subs++
		}
		rest = append(rest, l)
	}
	if !strings.HasPrefix(exit, "0") && !warned {
		t.Errorf("exit status %.3s", exit)
	}
	if subs != 5 && (!warned || subs < 1) {
		t.Errorf("%d Sub-Interval lines of a 5 s test (warned of a stall: %v):\n%s", subs, warned, report)
	}
	if len(rest) != bannerLines+subs+summaryLines {
		t.Errorf("%d lines on the final screen besides warnings, want %d of banner, %d Sub-Interval lines and %d of summary:\n%s",
			len(rest), bannerLines, subs, summaryLines, report)
	}
	for _, l := range rest {
		if !obudpstLine.MatchString(l) {
			t.Errorf("on the final screen, not OB-UDPST's text: %q", l)
		}
	}
}

// The client's text report around its Sub-Interval lines: the banner
// (title, version, mode, the test's two lines) and the summary (Summary,
// Minimum One-Way Delay, Maximum).
const (
	bannerLines  = 5
	summaryLines = 3
)

// trafficWarning is OB-UDPST's warning that a direction's traffic stopped
// for a second, at either end.
var trafficWarning = regexp.MustCompile(`^(LOCAL|REMOTE) WARNING: Incoming traffic has completely stopped \[Server [^]]+\]$`)
