package e2e

// The drop-in udpst takes the command lines of scripts written for
// OB-UDPST 8.x (docs/compatibility.md, "Options of older releases"):
// real processes through a udpst link against our server.

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestUdpstLegacySubIntervalSeconds: `udpst -d -P 1 -t 5 HOST`, as the
// TR-181 IPLayerCapacity() scripts of gateways pass the Sub-Interval
// period in 8.x's seconds, runs a test of five 1 s Sub-Intervals and exits
// 0, with one line on standard error that says how -P was read; 9.0.0's
// -P 500 (ms) runs as before, without the line; -P 50, neither unit,
// exits 50 with the line.
func TestUdpstLegacySubIntervalSeconds(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	link := udpstLink(t)
	for _, c := range []struct {
		p          string
		code       int
		subs, ms   int
		stderrLine string
	}{
		{"1", 0, 5, 1000, "udpst: -P 1 read as 1 s (OB-UDPST 8.x's unit), 1000 ms: OB-UDPST 9.0.0 takes -P in ms (100-10000)"},
		{"500", 0, 10, 500, ""},
		{"50", 50, 0, 0, "udpst: -P 50 is neither ms (OB-UDPST 9.0.0: 100-10000) nor seconds (OB-UDPST 8.x: 1-10)"},
	} {
		t.Run("P"+c.p, func(t *testing.T) {
			r := runCmd(exec.Command(link, "-d", "-P", c.p, "-t", "5", "-f", "json", "-p", fmt.Sprint(port), "127.0.0.1"), 40*time.Second)
			if r.err != nil && r.code < 0 {
				t.Fatal(r.err)
			}
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\nstdout %.2000s\nstderr %.2000s", r.code, c.code, r.stdout, r.stderr)
			}
			var notes []string
			for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
				if strings.HasPrefix(l, "udpst: -P ") {
					notes = append(notes, l)
				}
			}
			if got := strings.Join(notes, "\n"); got != c.stderrLine {
				t.Errorf("stderr lines %q, want %q", got, c.stderrLine)
			}
			if c.code != 0 {
				return
			}
			var doc struct {
				Input  struct{ TestSubInterval int }
				Output struct {
					IncrementalResult []struct{ IPLayerCapacity float64 }
				}
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatalf("not JSON: %v\n%.2000s", err, r.stdout)
			}
			if doc.Input.TestSubInterval != c.ms || len(doc.Output.IncrementalResult) != c.subs {
				t.Errorf("TestSubInterval %d, %d Sub-Intervals; want %d ms, %d", doc.Input.TestSubInterval, len(doc.Output.IncrementalResult), c.ms, c.subs)
			}
		})
	}
}

// TestUdpstOptionsOfOlderReleases: the options whose meaning or range
// changed from OB-UDPST 7.x/8.x to 9.0.0 without a change of unit, as an
// 8.x script passes them (docs/compatibility.md, "Options of older
// releases"): -R counts out-of-order and duplicate datagrams (7.5.1 on;
// 7.2.0's -R ignored them, now the default), -m takes any octet, the CE
// codepoint included (9.0.0 checks the ECN bits only with its -Z), -I
// takes 8.x's '@' starting index, -B 8.x's 1 Mbit/s.
func TestUdpstOptionsOfOlderReleases(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	r := runCmd(exec.Command(udpstLink(t), "-d", "-t", "5", "-R", "-m", "3", "-I", "@4", "-B", "1", "-f", "jsonf", "-p", fmt.Sprint(port), "127.0.0.1"), 40*time.Second)
	if r.code != 0 {
		t.Fatalf("exit %d %v\nstdout %.2000s\nstderr %.2000s", r.code, r.err, r.stdout, r.stderr)
	}
	var doc struct {
		Input struct {
			ReordDupIgnoreEnable, ECN, DSCP, StartSendingRateIndex, MaxRequiredBandwidth int
		}
		ErrorStatus int
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%.2000s", err, r.stdout)
	}
	if in := doc.Input; in.ReordDupIgnoreEnable != 0 || in.ECN != 3 || in.DSCP != 0 || in.StartSendingRateIndex != 4 || in.MaxRequiredBandwidth != 1 {
		t.Errorf("Input %+v: want OoO/Dup counted, ECN 3, DSCP 0, starting index 4, 1 Mbit/s", in)
	}
}
