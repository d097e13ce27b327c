package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubMillisecondDelays: on loopback, where OB-UDPST's whole-ms delay
// variations read 0, a downstream client reports them to the µs: a line
// of ours after each Sub-Interval line (OB-UDPST's line unchanged), the
// document's "udpstp"."Delays" (--extensions), each aggregate Sub-Interval's, where some
// Sub-Interval's ms average is 0 and its µs average is not.
func TestSubMillisecondDelays(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	doc := filepath.Join(t.TempDir(), "r.json")
	code, out, _ := runQuick(t, nil, udpstpBin, "client", "-d", "-t", "5", "-p", fmt.Sprint(port), "--extensions", "--output", doc, "127.0.0.1")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for n := 1; n <= 5; n++ {
		if !strings.Contains(out, fmt.Sprintf("\nSub-Interval[%d] to the microsecond: OWDVar(ms): ", n)) {
			t.Errorf("no line to the µs after Sub-Interval %d:\n%s", n, out)
		}
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	type delays struct {
		Interval                       int
		PDVAvg, RTTAvg, PDVMax, RTTMax float64
	}
	var r struct {
		Output struct{ IncrementalResult []delays }
		Udpstp struct{ Delays []delays } `json:"udpstp"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Udpstp.Delays) != len(r.Output.IncrementalResult) || len(r.Udpstp.Delays) != 5 {
		t.Fatalf("%d Sub-Intervals with µs delays, %d in all, want 5", len(r.Udpstp.Delays), len(r.Output.IncrementalResult))
	}
	zeroMs, subMs := 0, 0
	for i, fine := range r.Udpstp.Delays {
		ms := r.Output.IncrementalResult[i]
		if fine.Interval != ms.Interval {
			t.Errorf("Delays[%d] is Sub-Interval %d, want %d", i, fine.Interval, ms.Interval)
		}
		// The µs figures are the same measurement: they round to the ms
		// ones within a millisecond (OB-UDPST rounds each sample first).
		if fine.RTTMax > ms.RTTMax+0.001 || fine.PDVMax > ms.PDVMax+0.001 {
			t.Errorf("Sub-Interval %d: µs maxima %g/%g above the ms ones %g/%g", ms.Interval, fine.RTTMax, fine.PDVMax, ms.RTTMax, ms.PDVMax)
		}
		if ms.RTTAvg == 0 {
			zeroMs++
			if fine.RTTAvg > 0 && fine.RTTAvg < 0.001 {
				subMs++
			}
		}
	}
	switch {
	case zeroMs == 0:
		t.Skip("no Sub-Interval with a 0 ms RTT variation average: a machine this busy has no sub-ms loopback")
	case subMs == 0:
		t.Errorf("every 0 ms RTT variation average is 0 to the µs too: %+v", r.Udpstp.Delays)
	}
}
