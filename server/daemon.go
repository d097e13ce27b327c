package server

// -x: run in the background, for people who start the server from a
// shell (under systemd, run it in the foreground: Type=notify). OB-UDPST
// forks; a Go program cannot fork safely once its runtime has started
// threads, so the server starts itself again, detached: a new session,
// standard input and output on /dev/null, standard error on the -l log
// file (where a crash's trace then lands) or /dev/null. The first process
// waits until the second has its control sockets open, or has failed,
// and exits 0, or with the failure's line and status.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// EnvDaemonChild marks the detached server and names the descriptor on
// which it reports to the process that started it; the command reads it
// (and removes it, so nothing the server starts inherits it) into
// Daemon.Report.
const EnvDaemonChild = "UDPSTP_DAEMON_CHILD"

// Daemon is -x's side of the process.
type Daemon struct {
	// Report is, in the detached server, the descriptor EnvDaemonChild
	// names: its line back to the process that started it. nil otherwise.
	Report *os.File
	// Args and Environ are the command line (os.Args) and the
	// environment the server is started again with, detached.
	Args    []string
	Environ []string
}

// daemonStartTimeout bounds how long the starting process waits for the
// detached one.
const daemonStartTimeout = 15 * time.Second

// daemonChild is the detached server's line back to the process that
// started it; w is nil when this process was not started that way.
type daemonChild struct {
	w *os.File
}

// ready tells the starting process that the server runs.
func (d *daemonChild) ready() {
	if d == nil || d.w == nil {
		return
	}
	io.WriteString(d.w, "ready\n")
	d.w.Close()
	d.w = nil
}

// fail tells the starting process why the server could not start.
func (d *daemonChild) fail(err error) {
	if d == nil || d.w == nil || err == nil {
		return
	}
	fmt.Fprintf(d.w, "fail %d %s\n", exitCode(err), strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))
	d.w.Close()
	d.w = nil
}

// daemonize starts this server again, detached, and returns once it runs
// (nil: exit 0) or has failed (its error and status).
func daemonize(so Options, d Daemon, opt func(string) option) error {
	exe, err := os.Executable()
	if err != nil {
		return exitError("ERROR: cannot find the udpstp binary to start in the background: "+err.Error(), ExitFailure)
	}
	// Standard input and output, and standard error without -l, stay
	// nil: exec.Cmd connects them to /dev/null.
	var args []string
	if len(d.Args) > 0 {
		args = d.Args[1:]
	}
	cmd := exec.Command(exe, args...)
	if so.LogFile != "" {
		// Opened here, before detaching, as OB-UDPST does: a log file that
		// cannot be written is reported on the command line.
		f, err := openLogFile(so.LogFile)
		if err != nil {
			return fopenError(opt("log-file"), err)
		}
		defer f.Close()
		cmd.Stderr = f
	}
	r, w, err := os.Pipe()
	if err != nil {
		return exitError("ERROR: "+err.Error(), ExitFailure)
	}
	defer r.Close()
	cmd.Env = append(append([]string(nil), d.Environ...), EnvDaemonChild+"=3") // ExtraFiles[0] is descriptor 3
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = detachedAttr()
	if err := cmd.Start(); err != nil {
		w.Close()
		return exitError("ERROR: cannot start udpstp in the background: "+err.Error(), ExitFailure)
	}
	w.Close()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	var msg string
	select {
	case msg = <-line:
	case <-time.After(daemonStartTimeout):
		cmd.Process.Kill()
		cmd.Wait()
		return exitError(fmt.Sprintf("ERROR: the background server did not start within %v", daemonStartTimeout), ExitFailure)
	}
	switch {
	case msg == "ready":
		fmt.Fprintf(os.Stderr, "udpstp: server running in the background, process %d\n", cmd.Process.Pid)
		cmd.Process.Release()
		return nil
	case strings.HasPrefix(msg, "fail "):
		cmd.Wait()
		codeText, text, _ := strings.Cut(strings.TrimPrefix(msg, "fail "), " ")
		code, err := strconv.Atoi(codeText)
		if err != nil || code == 0 {
			code = ExitFailure
		}
		return exitError(text, code)
	}
	// It died without a word: its status says how.
	err = cmd.Wait()
	code := ExitFailure
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		code = ee.ExitCode()
	}
	return exitError(fmt.Sprintf("ERROR: the background server ended before it was ready (%v)", err), code)
}
