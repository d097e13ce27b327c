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

// envDaemonChild marks the detached server and names the descriptor on
// which it reports to the process that started it.
const envDaemonChild = "UDPSTP_DAEMON_CHILD"

// daemonStartTimeout bounds how long the starting process waits for the
// detached one.
const daemonStartTimeout = 15 * time.Second

// daemonChild is the detached server's line back to the process that
// started it; nil when this process was not started that way.
type daemonChild struct {
	w *os.File
}

// daemonChildFromEnv returns the report line if this process is a
// detached server, and removes the mark so nothing it starts inherits it.
func daemonChildFromEnv() *daemonChild {
	v := os.Getenv(envDaemonChild)
	if v == "" {
		return nil
	}
	os.Unsetenv(envDaemonChild)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil
	}
	f := os.NewFile(uintptr(fd), "daemon-report")
	if f == nil {
		return nil
	}
	return &daemonChild{w: f}
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
func daemonize(so Options) error {
	exe, err := os.Executable()
	if err != nil {
		return exitError("ERROR: cannot find the udpstp binary to start in the background: "+err.Error(), ExitFailure)
	}
	// Standard input and output, and standard error without -l, stay
	// nil: exec.Cmd connects them to /dev/null.
	cmd := exec.Command(exe, os.Args[1:]...)
	if so.LogFile != "" {
		// Opened here, before detaching, as OB-UDPST does: a log file that
		// cannot be written is reported on the command line.
		f, err := openLogFile(so.LogFile)
		if err != nil {
			return fopenError("log-file", err)
		}
		defer f.Close()
		cmd.Stderr = f
	}
	r, w, err := os.Pipe()
	if err != nil {
		return exitError("ERROR: "+err.Error(), ExitFailure)
	}
	defer r.Close()
	cmd.Env = append(os.Environ(), envDaemonChild+"=3") // ExtraFiles[0] is descriptor 3
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
