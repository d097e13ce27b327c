package control

// Access to the OB-UDPST 9.0.0 golden captures for the authentication tests,
// through internal/testkit/golden (which skips when the data is absent).

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// capturedPDU is one captured datagram.
type capturedPDU = golden.PDU

// clientPortOf returns the client's UDP port of a captured datagram.
func clientPortOf(p *capturedPDU) int {
	if p.Dir == "c2s" {
		return p.SrcPort
	}
	return p.DstPort
}

// goldenPath returns the path of a file of a scenario, or skips t.
func goldenPath(t testing.TB, scenario, file string) string {
	t.Helper()
	return filepath.Join(golden.Require(t), scenario, file)
}

// scenario finds a scenario by name, or fails t.
func scenario(t testing.TB, name string) golden.Scenario {
	t.Helper()
	for _, s := range golden.Scenarios(t) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("scenario %s not found", name)
	return golden.Scenario{}
}

// readCaptures reads one capture file of a scenario.
func readCaptures(t *testing.T, name, file string) []capturedPDU {
	t.Helper()
	pdus := scenario(t, name).PDUs(t, file)
	if len(pdus) == 0 {
		t.Fatalf("%s/%s: no datagrams", name, file)
	}
	for i, p := range pdus {
		if !p.Truncated && len(p.Bytes) != p.Len {
			t.Fatalf("%s/%s: datagram %d has %d bytes, len says %d", name, file, i, len(p.Bytes), p.Len)
		}
	}
	return pdus
}

// cmdAuth is the authentication part of one udpst command line.
type cmdAuth struct {
	Key     string // -a
	KeyFile string // -K
	KeyID   int    // -y
	IDGiven bool
}

// readCmdAuth returns the -a/-K/-y options of the server and the client of
// a scenario, from its meta.json. Both runs of a scenario use the same keys;
// the test fails if they do not.
func readCmdAuth(t *testing.T, name string) (server, client cmdAuth) {
	t.Helper()
	sc := scenario(t, name)
	auth := func(argv []string) cmdAuth {
		o, ok := golden.ParseUdpstArgs(argv)
		if !ok {
			t.Fatalf("%s: %v is not a udpst command", name, argv)
		}
		a := cmdAuth{Key: o.Opts['a'], KeyFile: o.Opts['K']}
		if v, ok := o.Opts['y']; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: -y %q: %v", name, v, err)
			}
			a.KeyID, a.IDGiven = n, true
		}
		return a
	}
	for i, r := range sc.Meta.Runs {
		if len(r.ServerCmds) == 0 {
			t.Fatalf("%s: run %s has no server", name, r.Run)
		}
		s, c := auth(r.ServerCmds[0]), auth(r.ClientCmd)
		if i > 0 && (s != server || c != client) {
			t.Fatalf("%s: the runs use different keys", name)
		}
		server, client = s, c
	}
	return server, client
}
