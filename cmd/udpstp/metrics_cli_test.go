package main

import (
	"path/filepath"
	"testing"
)

// TestMetricsOptions: --metrics-listen takes ADDR:PORT with both given
// and reaches the service options; --textfile takes a *.prom name in a
// directory that exists; anything else is one line, exit 50, no run.
func TestMetricsOptions(t *testing.T) {
	for _, a := range []string{"127.0.0.1:24602", "[::1]:9", "0.0.0.0:65535", "localhost:24602"} {
		if _, lo := mustServer(t, "--metrics-listen", a); lo.Service.MetricsListen != a {
			t.Errorf("--metrics-listen %s: %q", a, lo.Service.MetricsListen)
		}
	}
	if _, lo := mustServer(t); lo.Service.MetricsListen != "" {
		t.Errorf("no endpoint asked for, yet %q", lo.Service.MetricsListen)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "--metrics-listen", ":24602"}, "not an ADDR:PORT for --metrics-listen"},
		{[]string{"server", "--metrics-listen", "127.0.0.1"}, "not an ADDR:PORT for --metrics-listen"},
		{[]string{"server", "--metrics-listen", "::1:24602"}, "not an ADDR:PORT for --metrics-listen"},
		{[]string{"server", "--metrics-listen", ""}, "not an ADDR:PORT for --metrics-listen"},
		{[]string{"server", "--metrics-listen", "127.0.0.1:0"}, "out-of-range for --metrics-listen port (1-65535)"},
		{[]string{"server", "--metrics-listen", "127.0.0.1:http"}, "not a valid number for --metrics-listen port"},
		{[]string{"client", "-d", "h", "--metrics-listen", "127.0.0.1:24602"}, "Metrics endpoint only valid when server"},
		{[]string{"client", "-d", "h", "--textfile", "result.json"}, "does not end in .prom"},
		{[]string{"client", "-d", "h", "--textfile", ".prom"}, "does not end in .prom"},
		{[]string{"client", "-d", "h", "--textfile", ""}, "--textfile needs a file name"},
		{[]string{"client", "-d", "h", "--textfile", filepath.Join(t.TempDir(), "no", "r.prom")}, "not found (--textfile)"},
		{[]string{"server", "--textfile", "r.prom"}, "Textfile only valid when client"},
	} {
		mustFail(t, exitConfig, c.args, c.want)
	}
	dir := t.TempDir()
	if c, _ := mustClient(t, "-d", "h", "--textfile", filepath.Join(dir, "x.prom")); c.TextFile != filepath.Join(dir, "x.prom") {
		t.Errorf("--textfile: %q", c.TextFile)
	}
}
