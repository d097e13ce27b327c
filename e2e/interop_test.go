package e2e

import (
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/netlab"
)

// udpstBin returns the OB-UDPST 9.0.0 binary to test against, or skips:
// it is built outside this repository (DEVELOPERS.md) and named by
// UDPST_BIN.
func udpstBin(t *testing.T) string {
	t.Helper()
	b := optionalUdpstBin(t)
	if b == "" {
		t.Skip("UDPST_BIN is not set: no OB-UDPST binary to interoperate with (see DEVELOPERS.md)")
	}
	return b
}

// optionalUdpstBin returns UDPST_BIN, or "" when it is not set; a binary
// that is not there fails the test.
func optionalUdpstBin(t *testing.T) string {
	t.Helper()
	b := os.Getenv("UDPST_BIN")
	if b == "" {
		return ""
	}
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("UDPST_BIN=%s: %v", b, err)
	}
	return b
}

// takeAllSlots holds every end-to-end slot until t ends: a comparison,
// like the lab, needs the CPUs to itself.
func takeAllSlots(t *testing.T) {
	for range cap(e2eSlots) {
		e2eSlots <- struct{}{}
	}
	t.Cleanup(func() {
		for range cap(e2eSlots) {
			<-e2eSlots
		}
	})
}

// TestInterop runs our client against udpst as server and udpst as client
// against our server, downstream and upstream, with and without a key:
// each test completes with as many Sub-Intervals as OB-UDPST talking to
// itself in the same run. The maxima are logged; comparing them measures
// the machine too, so TestLabInterop judges them, in `make lab`.
func TestInterop(t *testing.T) {
	ob := udpstBin(t)
	if testing.Short() {
		t.Skip("interop runs real 5 s tests (skipped with -short)")
	}
	takeAllSlots(t)
	interopPairings(t, ob, 1, false)
}

// TestLabInterop compares each pairing's maximum with OB-UDPST talking to
// itself in the same run: within 10 %.
//
// Each pairing runs twice and keeps its better maximum. A 5 s test's
// maximum is set by how far the search ramps, and on a shared 2-core
// machine a Load Sender that falls behind (OB-UDPST's never catches up)
// loses whole Trial Intervals of ramp: single runs of OB-UDPST against
// itself were seen 10 % apart. The best of two measures the pairing, not
// the machine's worst moment.
func TestLabInterop(t *testing.T) {
	netlab.LabOnly(t)
	ob := udpstBin(t)
	takeAllSlots(t)
	interopPairings(t, ob, 2, true)
}

// interopPairings runs every pairing of TestInterop, each runs times
// keeping the best maximum, and with judge compares the maxima.
func interopPairings(t *testing.T, ob string, runs int, judge bool) {
	const host = "127.0.0.1"
	for _, dir := range []string{"-d", "-u"} {
		for _, key := range []string{"", "interop-key-0123"} {
			auth := func() []string {
				if key == "" {
					return nil
				}
				return []string{"-a", key}
			}
			name := fmt.Sprintf("%s/auth=%v", dir, key != "")
			t.Run(name, func(t *testing.T) {
				run := func(serverBin, clientBin string) (testResult, int, string) {
					port := freePort(t, host)
					sargs := append([]string{"-p", fmt.Sprint(port)}, auth()...)
					if serverBin == udpstpBin {
						sargs = append([]string{"server"}, sargs...)
					}
					spawnServer(t, serverBin, append(sargs, host)...)
					cargs := append([]string{dir, "-t", "5", "-p", fmt.Sprint(port)}, auth()...)
					if clientBin == udpstpBin {
						cargs = append([]string{"client"}, cargs...)
					}
					return runTestProc(t, clientBin, append(cargs, host)...)
				}
				// best runs a pairing runs times; every run must complete.
				best := func(server, client string, subs int) testResult {
					var out testResult
					for range runs {
						r, code, text := run(server, client)
						checkComplete(t, r, code, text, subs)
						if r.Output.AtMax.MaxIPLayerCapacity > out.Output.AtMax.MaxIPLayerCapacity {
							out = r
						}
					}
					return out
				}
				ref := best(ob, ob, 5)
				refMax := ref.Output.AtMax.MaxIPLayerCapacity
				for _, pair := range []struct {
					name           string
					server, client string
				}{{"udpstp client, udpst server", ob, udpstpBin}, {"udpst client, udpstp server", udpstpBin, ob}} {
					r := best(pair.server, pair.client, len(ref.Output.IncrementalResult))
					m := r.Output.AtMax.MaxIPLayerCapacity
					t.Logf("%s %s: max %.2f Mbps, OB-UDPST with itself %.2f Mbps (%+.1f %%)", name, pair.name, m, refMax, 100*(m-refMax)/refMax)
					if judge && math.Abs(m-refMax) > 0.10*refMax {
						t.Errorf("%s: maximum %.2f Mbps, OB-UDPST with itself %.2f", pair.name, m, refMax)
					}
				}
			})
		}
	}
}

// TestInteropMultiConnection: our client with -C 3 over two OB-UDPST
// servers, and OB-UDPST's client with -C 3 over two of ours, both
// directions: every connection comes up and the test completes.
func TestInteropMultiConnection(t *testing.T) {
	ob := udpstBin(t)
	if testing.Short() {
		t.Skip("interop runs real 5 s tests (skipped with -short)")
	}
	takeAllSlots(t)
	for _, dir := range []string{"-d", "-u"} {
		for _, pair := range []struct {
			name           string
			server, client string
		}{{"udpstp client, udpst servers", ob, udpstpBin}, {"udpst client, udpstp servers", udpstpBin, ob}} {
			t.Run(dir+"/"+pair.name, func(t *testing.T) {
				var hosts []string
				for i := 0; i < 2; i++ {
					port := freePort(t, "127.0.0.1")
					args := []string{"-p", fmt.Sprint(port), "127.0.0.1"}
					if pair.server == udpstpBin {
						args = append([]string{"server"}, args...)
					}
					spawnServer(t, pair.server, args...)
					hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", port))
				}
				args := append([]string{dir, "-C", "3", "-t", "5"}, hosts...)
				if pair.client == udpstpBin {
					args = append([]string{"client"}, args...)
				}
				r, code, out := runTestProc(t, pair.client, args...)
				checkComplete(t, r, code, out, 5)
				t.Logf("%s %s: max %.2f Mbps over 3 connections", dir, pair.name, r.Output.AtMax.MaxIPLayerCapacity)
			})
		}
	}
}
