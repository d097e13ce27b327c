package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/udpstp/udpstp/internal/testkit/await"
	"github.com/udpstp/udpstp/internal/testkit/golden"
	"github.com/udpstp/udpstp/report"
)

// TestSchemaClientResults: our client's JSON result, with default options,
// passes the JSON Schema derived from OB-UDPST's own results
// (testdata/schema, internal/testkit/golden): no key OB-UDPST does not write, at
// any level, of its types; for the scenarios the captures have, run for
// real against our server on loopback: both directions, -C 4, jumbo off,
// a fixed rate, the --output file (jsonf), and the error documents of a
// jumbo mismatch, a capacity exceeded and of no server. With --extensions the result has our
// "udpstp" key and the schema refuses it.
func TestSchemaClientResults(t *testing.T) {
	s := golden.Schema(t)
	cases := []struct {
		name   string
		server []string // nil: no server at all
		client []string
		status int // -1: 0 or a warning (1-49)
		ext    bool
	}{
		{name: "down", server: []string{}, client: []string{"-d"}, status: -1},
		{name: "up", server: []string{}, client: []string{"-u"}, status: -1},
		{name: "down-C4", server: []string{}, client: []string{"-d", "-C", "4"}, status: -1},
		{name: "up-C4", server: []string{}, client: []string{"-u", "-C", "4"}, status: -1},
		{name: "down-jumbo-off", server: []string{"-j"}, client: []string{"-d", "-j"}, status: -1},
		{name: "jumbo-mismatch", server: []string{}, client: []string{"-d", "-j"}, status: 103},
		{name: "up-fixed-rate", server: []string{}, client: []string{"-u", "-I", "20"}, status: -1},
		{name: "capacity-exceeded", server: []string{"-B", "100"}, client: []string{"-d", "-B", "200"}, status: 110},
		{name: "no-server", client: []string{"-d"}, status: report.StatusMinConns},
		{name: "up-C2-extensions", server: []string{}, client: []string{"-u", "-C", "2", "--extensions"}, status: -1, ext: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e2e(t)
			port := freePort(t, "127.0.0.1")
			if c.server != nil {
				spawnServer(t, udpstpBin, append([]string{"server", "-p", fmt.Sprint(port), "127.0.0.1"}, c.server...)...)
			}
			file := filepath.Join(t.TempDir(), "result.json")
			args := append([]string{"client", "-f", "json", "-t", "5", "-p", fmt.Sprint(port), "--output", file}, c.client...)
			out, code, err := runClientProc(udpstpBin, append(args, "127.0.0.1")...)
			if err != nil {
				t.Fatal(err)
			}
			if c.status >= 0 && code != c.status || c.status < 0 && code > report.StatusWarnMax {
				t.Fatalf("exit %d, want %d\n%s", code, c.status, out)
			}
			saved, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var top map[string]json.RawMessage
			if err := json.Unmarshal(out, &top); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			_, hasExt := top[report.ExtensionKey]
			for what, doc := range map[string][]byte{"standard output": out, "--output file": saved} {
				err := golden.ValidateDoc(s, doc)
				switch {
				case c.ext && err == nil:
					t.Errorf("%s: with --extensions the schema accepts it:\n%s", what, doc)
				case c.ext:
					checkRefusedFor(t, err, report.ExtensionKey)
				case err != nil:
					t.Errorf("%s: %v\n%s", what, err, doc)
				}
			}
			if hasExt != c.ext {
				t.Errorf("the %q key present %v, --extensions %v", report.ExtensionKey, hasExt, c.ext)
			}
		})
	}
}

// checkRefusedFor requires the schema's refusal to name key, so that the
// extension and nothing else made the document fail.
func checkRefusedFor(t *testing.T, err error, key string) {
	t.Helper()
	if ve, ok := err.(*jsonschema.ValidationError); !ok || !strings.Contains(ve.Error(), "'"+key+"'") {
		t.Errorf("refused, but not for %q: %v", key, err)
	}
}

// hostsResult is what TestMultiServer reads of a result.
type hostsResult struct {
	ErrorStatus int
	Input       struct {
		Host                string
		HostIPAddress       string
		NumberOfHosts       int
		NumberOfConnections int
		HostList            []struct {
			Host          string
			HostIPAddress string
			ControlPort   int
		}
	}
	Output struct {
		IncrementalResult []struct{ ActiveConnections int }
		Status            string
	}
}

// TestMultiServer: one test of four Test Connections (-C 4) over two of
// our servers, on 127.0.0.1 and 127.0.0.2, each direction: the run
// completes, the result names both servers with their addresses (the top
// level's the first's, as OB-UDPST's client fills them), each server
// served two of the connections (their logs' "test started"), and the
// result passes the schema of OB-UDPST's results.
func TestMultiServer(t *testing.T) {
	s := golden.Schema(t)
	for _, dir := range []string{"-u", "-d"} {
		t.Run(dir, func(t *testing.T) {
			e2e(t)
			addrs := []string{"127.0.0.1", "127.0.0.2"}
			var procs []*proc
			var hosts []string
			var ports []int
			for _, a := range addrs {
				port := freePort(t, a)
				procs = append(procs, spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), a))
				hosts = append(hosts, fmt.Sprintf("%s:%d", a, port))
				ports = append(ports, port)
			}
			out, code, err := runClientProc(udpstpBin, append([]string{"client", "-f", "json", "-t", "5", "-C", "4", dir}, hosts...)...)
			if err != nil {
				t.Fatal(err)
			}
			var r hostsResult
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("not JSON (exit %d): %v\n%s", code, err, out)
			}
			if code != 0 || r.ErrorStatus != 0 || r.Output.Status != "Complete" {
				t.Fatalf("exit %d, ErrorStatus %d, Status %q\n%s", code, r.ErrorStatus, r.Output.Status, out)
			}
			if err := golden.ValidateDoc(s, out); err != nil {
				t.Errorf("the schema refuses it: %v\n%s", err, out)
			}
			in := r.Input
			if in.NumberOfHosts != 2 || len(in.HostList) != 2 || in.NumberOfConnections != 4 {
				t.Fatalf("hosts %d (%d listed), connections %d", in.NumberOfHosts, len(in.HostList), in.NumberOfConnections)
			}
			if in.Host != addrs[0] || in.HostIPAddress != addrs[0] {
				t.Errorf("top-level Host %q, HostIPAddress %q, want %s", in.Host, in.HostIPAddress, addrs[0])
			}
			for i, h := range in.HostList {
				if h.Host != addrs[i] || h.HostIPAddress != addrs[i] || h.ControlPort != ports[i] {
					t.Errorf("HostList[%d] = %+v, want %s port %d", i, h, addrs[i], ports[i])
				}
			}
			for _, sub := range r.Output.IncrementalResult {
				if sub.ActiveConnections != 4 {
					t.Errorf("a Sub-Interval with %d active connections, want 4", sub.ActiveConnections)
					break
				}
			}
			// Each server logs a line as each of its tests starts and
			// ends; the client has exited, the lines follow.
			for i, p := range procs {
				count := func(s string) int { return strings.Count(p.log(), s) }
				await.True(t, "the tests' ends in "+addrs[i]+"'s log", func() bool { return count("test ended") >= 2 })
				if st, end := count("test started"), count("test ended"); st != 2 || end != 2 {
					t.Errorf("server %s: %d tests started, %d ended, want 2 of the 4 connections:\n%s", addrs[i], st, end, p.log())
				}
			}
		})
	}
}
