package e2e

import (
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMetricsListenTaken: an endpoint address in use is a start error,
// one line and exit 75, before the control sockets exist.
func TestMetricsListenTaken(t *testing.T) {
	processTest(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := runCmd(exec.Command(udpstpBin, "server", "-p", "1", "--metrics-listen", l.Addr().String(), "127.0.0.1"), 10*time.Second)
	msg := strings.TrimSpace(r.stderr)
	if r.err != nil || r.code != exitInit || strings.Count(msg, "\n") != 0 ||
		!strings.Contains(msg, "--metrics-listen") || !strings.Contains(msg, "address already in use") {
		t.Errorf("exit %d %v, want %d with one line naming the option: %q", r.code, r.err, exitInit, msg)
	}
}
