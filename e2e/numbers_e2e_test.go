package e2e

// The figures a person reads on a LAN, from real processes on loopback:
// OB-UDPST's whole-ms delays read 0 there, so the latency under load, the
// RPM and the text's minimum round trip come from udpstp's own figures to
// the µs (report/fine.go, report/responsiveness.go; docs/history.md).

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/udpstp/udpstp/store"
)

// TestLoopbackResponsivenessMicroseconds: our client's --bidirectional
// test against our server, as the agent runs it: the document's loaded
// round trip is computed from the µs figures and says so, and
// store.Summarize (what the agent and the history store) gives the same
// round trip and its RPM, not the 1 ms floor of the ms figures (60000
// RPM on every LAN).
func TestLoopbackResponsivenessMicroseconds(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	out, code, err := runClientProc(udpstpBin, "client", "-f", "json", "--bidirectional", "-t", "5", "-p", fmt.Sprint(port), "127.0.0.1")
	if err != nil || code != 0 {
		t.Fatalf("exit %d %v\n%.3000s", code, err, out)
	}
	type half struct {
		Loaded struct {
			RTTAvg float64
			Fine   *struct{ RTTAvg float64 }
		}
		MinRTTFine, RTTVarBaseFine *float64
	}
	var doc struct {
		Udpstp struct {
			Bidirectional struct {
				Upstream, Downstream half
				LoadedRTT, RPM       float64
				LoadedRTTResolution  string
			}
		} `json:"udpstp"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("not JSON: %v\n%.3000s", err, out)
	}
	b := doc.Udpstp.Bidirectional
	if b.LoadedRTTResolution != "microsecond" {
		t.Fatalf("LoadedRTTResolution %q, want microsecond\n%.3000s", b.LoadedRTTResolution, out)
	}
	d := b.Downstream
	if d.RTTVarBaseFine == nil || d.Loaded.Fine == nil {
		t.Fatalf("the downstream half lacks its figures to the µs: %+v", d)
	}
	// Our client is the downstream half's Load Receiver, the only one
	// with µs figures: the loaded round trip is its base plus its mean.
	want := 1000 * (*d.RTTVarBaseFine + d.Loaded.Fine.RTTAvg)
	if got := 1000 * b.LoadedRTT; math.Abs(got-want) > 0.0015 {
		t.Errorf("LoadedRTT %.6f ms, want %.6f from the µs figures", got, want)
	}
	r, err := store.Summarize(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.LoadedMs == nil || r.RPM == nil || math.Abs(*r.LoadedMs-1000*b.LoadedRTT) > 0.0015 || math.Abs(*r.RPM - 60000 / *r.LoadedMs) > 1e-6 {
		t.Fatalf("Summarize: loaded %v ms, RPM %v; the document's %v s", r.LoadedMs, r.RPM, b.LoadedRTT)
	}
	if d.MinRTTFine != nil && *d.MinRTTFine >= 0.001 {
		t.Errorf("minimum round trip on loopback %v s, not under 1 ms", *d.MinRTTFine)
	}
	t.Logf("loopback under load: %.3f ms, %.0f RPM (%s)", *r.LoadedMs, *r.RPM, r.Grade)
}

// TestLoopbackMinimumLineMicroseconds: the text report keeps OB-UDPST's
// minimum line, whole ms as parsers read it, and adds ours after it with
// the same minima to the µs: on loopback a round trip under 1 ms.
func TestLoopbackMinimumLineMicroseconds(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	out, code, err := runClientProc(udpstpBin, "client", "-d", "-t", "5", "-p", fmt.Sprint(port), "127.0.0.1")
	if err != nil || code != 0 {
		t.Fatalf("exit %d %v\n%.3000s", code, err, out)
	}
	re := regexp.MustCompile(`\nDownstream Minimum One-Way Delay\(ms\): -?\d+ \[w/clock diff\], Round-Trip Time\(ms\): \d+, Active Connections: 1\n` +
		`Downstream Minimum to the microsecond: One-Way Delay\(ms\): (-?\d+\.\d{3}) \[w/clock diff\], Round-Trip Time\(ms\): (\d+\.\d{3})\n`)
	m := re.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no OB-UDPST minimum line followed by ours with a round trip:\n%s", out)
	}
	rtt, err := strconv.ParseFloat(string(m[2]), 64)
	if err != nil || rtt >= 1 {
		t.Errorf("minimum round trip on loopback %s ms, not under 1 ms", m[2])
	}
}
