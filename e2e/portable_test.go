//go:build portable

package e2e

import (
	"debug/buildinfo"
	"fmt"
	"testing"
)

// Built with -tags portable (make portable), the end-to-end tests run
// processes whose socket and executor are the ones macOS, Windows and the
// BSDs use (engine/socket_other.go, wait_other.go, pool_other.go): on
// Linux, here, where there is no other machine to run them on.
func init() { buildFlags = append(buildFlags, "-tags", "portable") }

// TestPortableBinary: the binary the end-to-end tests run was built with
// the tag, and its server runs one Engine Thread per Test Connection, not
// Linux's pool; else those tests would prove nothing about the portable
// path.
func TestPortableBinary(t *testing.T) {
	processTest(t)
	bi, err := buildinfo.ReadFile(udpstpBin)
	if err != nil {
		t.Fatal(err)
	}
	tags := ""
	for _, s := range bi.Settings {
		if s.Key == "-tags" {
			tags = s.Value
		}
	}
	if tags != "portable" {
		t.Fatalf("%s built with -tags=%q, want portable", udpstpBin, tags)
	}
	port := freePort(t, "127.0.0.1")
	p := spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	const want = "one Engine Thread per Test Connection"
	if l := lineWith(p.log(), "server started"); l == "" || lineWith(l, want) == "" {
		t.Fatalf("server's start-up line %q does not say %q", l, want)
	}
}
