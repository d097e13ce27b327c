package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// legacyReleases are the OB-UDPST releases the live cells of
// docs/compatibility.md run against: the variable naming each one's binary
// (built outside this repository from its release tag) and the protocol
// version our client speaks to its server.
var legacyReleases = []struct {
	release, env string
	protocol     int
}{
	{"7.2.0", "UDPST_BIN_7_2_0", 8},
	{"7.5.1", "UDPST_BIN_7_5_1", 9},
	{"8.1.0", "UDPST_BIN_8_1_0", 10},
	{"8.2.0", "UDPST_BIN_8_2_0", 11},
	{"9.0.0", "UDPST_BIN_9_0_0", 20},
}

// textComplete checks a text-output test: exit status 0, a Summary line
// and subs Sub-Interval lines (or all but the last, see
// checkSubIntervals). The exit status alone proves nothing: a client that
// saw no Sub-Interval exits 0 too. Text, not JSON: OB-UDPST 7.x's JSON
// has other keys.
func textComplete(t *testing.T, code int, out []byte, subs int) {
	t.Helper()
	s := string(out)
	if code != 0 || !strings.Contains(s, "Summary") {
		t.Fatalf("test did not complete: exit status %d\n%s", code, s)
	}
	// "Sub-Interval[n](sec)": our upstream sender's skipped-Burst lines
	// start with "Sub-Interval[n]:".
	checkSubIntervals(t, strings.Count(s, "](sec)"), subs)
}

// TestInteropLegacy runs the live cells of docs/compatibility.md: each
// OB-UDPST release's client against our server and our client (with
// --protocol for the release's version) against its server, downstream and
// upstream, each to completion. A release whose binary is not named is
// skipped, saying which variable names it; 9.0.0 also takes UDPST_BIN.
func TestInteropLegacy(t *testing.T) {
	if testing.Short() {
		t.Skip("interop runs real 5 s tests (skipped with -short)")
	}
	for _, rel := range legacyReleases {
		t.Run(rel.release, func(t *testing.T) {
			bin := os.Getenv(rel.env)
			if bin == "" && rel.release == "9.0.0" {
				bin = os.Getenv("UDPST_BIN")
			}
			if bin == "" {
				t.Skipf("%s is not set: no OB-UDPST %s binary (built outside this repository from its release tag)", rel.env, rel.release)
			}
			if _, err := os.Stat(bin); err != nil {
				t.Fatalf("%s=%s: %v", rel.env, bin, err)
			}
			takeAllSlots(t)
			if rel.protocol < 11 {
				// Signed as these releases sign (docs/compatibility.md).
				t.Run("-d/udpst client -a, udpstp server -a", func(t *testing.T) {
					port := freePort(t, "127.0.0.1")
					spawnServer(t, udpstpBin, "server", "-a", "legacy-key-0123", "-p", fmt.Sprint(port), "127.0.0.1")
					out, code, err := runClientProc(bin, "-d", "-t", "5", "-a", "legacy-key-0123", "-p", fmt.Sprint(port), "127.0.0.1")
					if err != nil {
						t.Fatal(err)
					}
					textComplete(t, code, out, 5)
				})
			}
			for _, dir := range []string{"-d", "-u"} {
				t.Run(dir+"/udpst client, udpstp server", func(t *testing.T) {
					port := freePort(t, "127.0.0.1")
					spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
					out, code, err := runClientProc(bin, dir, "-t", "5", "-p", fmt.Sprint(port), "127.0.0.1")
					if err != nil {
						t.Fatal(err)
					}
					textComplete(t, code, out, 5)
				})
				t.Run(dir+"/udpstp client, udpst server", func(t *testing.T) {
					port := freePort(t, "127.0.0.1")
					spawnServer(t, bin, "-p", fmt.Sprint(port), "127.0.0.1")
					out, code, err := runClientProc(udpstpBin, "client", dir, "-t", "5", "--protocol", fmt.Sprint(rel.protocol),
						"-p", fmt.Sprint(port), "127.0.0.1")
					if err != nil {
						t.Fatal(err)
					}
					textComplete(t, code, out, 5)
				})
			}
		})
	}
}

// TestE2ELegacyProtocol: our client speaking protocols 8, 10 and 11 to our
// server completes, each in the other direction than the last, so every
// old layout crosses a real socket in make test without an old binary.
func TestE2ELegacyProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end runs real 5 s tests (skipped with -short)")
	}
	for i, p := range []int{8, 10, 11} {
		dir := []string{"-u", "-d"}[i%2]
		t.Run(fmt.Sprintf("protocol%d%s", p, dir), func(t *testing.T) {
			e2eSlots <- struct{}{}
			defer func() { <-e2eSlots }()
			port := freePort(t, "127.0.0.1")
			spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
			r, code, out := runTestProc(t, udpstpBin, "client", dir, "-t", "5", "--protocol", fmt.Sprint(p), "-p", fmt.Sprint(port), "127.0.0.1")
			checkComplete(t, r, code, out, 5)
		})
	}
}
