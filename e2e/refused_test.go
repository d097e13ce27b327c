package e2e

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/internal/enginenet"
	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// closedPort is a UDP port of host where nothing listens (freePort's).
func closedPort(t testing.TB, host string) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr(host), uint16(freePort(t, host)))
}

// TestRefusedPort: a client asked to test against a port where nothing
// listens says that the connection was refused (the kernel's ICMP port
// unreachable), naming the server as [addr]:port for IPv6, instead of
// waiting for its setup timeout, and exits with OB-UDPST's status for a
// failed setup (200: "Minimum required connections (1) unavailable",
// testdata/obudpst/no_server_closed_port). The text report on standard
// output is OB-UDPST's; the errors are on standard error too.
func TestRefusedPort(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: real processes (skipped with -short)")
	}
	for _, host := range []string{"127.0.0.1", "::1"} {
		t.Run(host, func(t *testing.T) {
			ap := closedPort(t, host)
			code, stdout, stderr := runQuick(t, nil, udpstpBin, "client", "-d", "-t", "5", ap.String())
			refused := "WARNING: Connection refused by server " + ap.String() + " (ICMP port unreachable"
			if code != 200 {
				t.Errorf("exit %d, want 200", code)
			}
			if !strings.Contains(stdout, refused) || !strings.Contains(stdout, "ERROR: Minimum required connections (1) unavailable") {
				t.Errorf("standard output lacks the refusal or the error:\n%s", stdout)
			}
			if strings.Contains(stdout, "Timeout awaiting response") {
				t.Errorf("a refused port reported as a timeout:\n%s", stdout)
			}
			if !strings.Contains(stderr, refused) || !strings.Contains(stderr, "ERROR: Minimum required connections (1) unavailable") {
				t.Errorf("standard error lacks the refusal or the error:\n%s", stderr)
			}
		})
	}
}

// TestRefusedPortSentOnce: the refusal is taken from the one Setup Request
// the client sent: in a lab, the server's namespace counts one datagram to
// a closed port (Udp:NoPorts) and one port unreachable sent back.
func TestRefusedPortSentOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("network lab: real processes in namespaces (skipped with -short)")
	}
	l := netlab.New(t, netlab.Config{})
	before, err := l.Counters(l.ServerNS)
	if err != nil {
		t.Fatal(err)
	}
	server := netip.AddrPortFrom(l.ServerAddr, labPort)
	code, stdout, _ := runQuick(t, nil, l.Command(l.ClientNS, udpstpBin, "client", "-d", "-t", "5", server.String()).Args...)
	after, err := l.Counters(l.ServerNS)
	if err != nil {
		t.Fatal(err)
	}
	if code != 200 || !strings.Contains(stdout, "Connection refused by server "+server.String()) {
		t.Errorf("exit %d, want 200 with the refusal:\n%s", code, stdout)
	}
	if n := after["Udp:NoPorts"] - before["Udp:NoPorts"]; n != 1 {
		t.Errorf("%d datagrams reached the closed port, want 1 (the Setup Request)", n)
	}
	if n := after["Icmp:OutDestUnreachs"] - before["Icmp:OutDestUnreachs"]; n != 1 {
		t.Errorf("%d port unreachables sent, want 1", n)
	}
}

// activateRefused runs a client's Control Phase in this process, on the
// engine's sockets, against a closed port, and returns how long it took
// to fail.
func activateRefused(tb testing.TB, ap netip.AddrPort) time.Duration {
	tb.Helper()
	n, closeNet := enginenet.NewClient(enginenet.Options{})
	defer closeNet()
	cfg := control.DefaultClientConfig()
	start := time.Now()
	_, err := control.Activate(context.Background(), n, &cfg, control.ServerAddr{Host: ap.Addr().String(), Port: int(ap.Port())}, 0, 1, func(string) {})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "Connection refused") {
		tb.Fatalf("activation against a closed port: %v", err)
	}
	return took
}

// TestLabRefusedPortTime: the refusal comes within 100 ms on loopback
// (OB-UDPST's client waits 3 s), measured over the Control Phase.
func TestLabRefusedPortTime(t *testing.T) {
	netlab.LabOnly(t)
	took := activateRefused(t, closedPort(t, "127.0.0.1"))
	t.Logf("refused port reported in %v", took)
	if took > 100*time.Millisecond {
		t.Errorf("refused port reported after %v, want within 100 ms", took)
	}
}

// BenchmarkRefusedPort: how long a setup against a closed port takes to
// fail.
func BenchmarkRefusedPort(b *testing.B) {
	ap := closedPort(b, "127.0.0.1")
	for b.Loop() {
		activateRefused(b, ap)
	}
}
