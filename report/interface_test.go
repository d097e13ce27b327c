package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// runInterface runs three Sub-Intervals of two connections with -E (and
// -M when intfMax), the interface reporting rates[k] for aggregate k, and
// returns the text and the JSON document of the same run.
func runInterface(t *testing.T, intfMax bool, rates []float64) (string, []byte) {
	t.Helper()
	var docs [2][]byte
	for i, f := range []Format{FormatText, FormatJSON} {
		var out bytes.Buffer
		calls := 0
		c := New(&out, Options{Format: f, Connections: 2, MinConnections: 1, Now: fixedClock(1796009000e9),
			InterfaceRate: func() float64 { calls++; return rates[calls-1] }})
		info := testInfo(3)
		info.Interface, info.InterfaceMax = "veth0", intfMax
		c.Activate(info)
		c.WriteHeader(0)
		for k := 1; k <= 3; k++ {
			for conn := range 2 {
				c.Add(conn, fakeResult(k, conn, false))
			}
		}
		c.ConnEnded(true)
		c.ConnEnded(true)
		if err := c.Finish(); err != nil {
			t.Fatal(err)
		}
		if calls != 3 {
			t.Errorf("interface read %d times for 3 aggregate Sub-Intervals", calls)
		}
		docs[i] = out.Bytes()
	}
	return string(docs[0]), docs[1]
}

// TestInterfaceRate: -E adds OB-UDPST's " [x.xx]" after the aggregate's
// L3 rates and ", [intf]" to the header, the JSON's Interface and
// InterfaceEthMbps keys; -M makes the interface's rate pick the maximum.
func TestInterfaceRate(t *testing.T) {
	rates := []float64{500, 900, 700} // the middle one is the interface's maximum
	text, js := runInterface(t, false, rates)
	for _, want := range []string{
		"DSCP+ECN: 0, CE Th: 0, [veth0]\n",
		"Mbps(L3/IP): 20.38 [500.00]\nSub-Interval[2]",
		" [900.00]\nSub-Interval[3]",
		" [700.00]\nDownstream Summary", // Sub-Interval 3
		" [700.00]\nDownstream Minimum", // the Summary: the average of 500, 900, 700
		" [700.00], Mbps(L2/Eth)",       // the Maximum: the traffic's, Sub-Interval 3's
	} {
		if !strings.Contains(text, want) {
			t.Errorf("-E text lacks %q:\n%s", want, text)
		}
	}
	var doc struct {
		Input struct {
			Interface              string
			InterfaceDeterminesMax int
		}
		Output struct {
			IncrementalResult []struct{ InterfaceEthMbps float64 }
			Summary           struct{ InterfaceEthMbps float64 }
			AtMax             struct {
				InterfaceEthMbps   float64
				MaxIPLayerCapacity float64
			}
		}
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Input.Interface != "veth0" || doc.Input.InterfaceDeterminesMax != 0 || len(doc.Output.IncrementalResult) != 3 ||
		doc.Output.IncrementalResult[1].InterfaceEthMbps != 900 || doc.Output.Summary.InterfaceEthMbps != 700 ||
		doc.Output.AtMax.InterfaceEthMbps != 700 {
		t.Errorf("-E JSON: %+v", doc)
	}
	trafficMax := doc.Output.AtMax.MaxIPLayerCapacity

	text, js = runInterface(t, true, rates)
	if !strings.Contains(text, " [900.00], Mbps(L2/Eth)") {
		t.Errorf("-M: the maximum is not the interface's highest Sub-Interval:\n%s", text)
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Input.InterfaceDeterminesMax != 1 || doc.Output.AtMax.InterfaceEthMbps != 900 || doc.Output.AtMax.MaxIPLayerCapacity >= trafficMax {
		t.Errorf("-M JSON: %+v (traffic maximum %.2f)", doc, trafficMax)
	}
}

// TestOnInterval: the hook sees each connection's Sub-Interval and each
// aggregate one, in order, also with -s, and the aggregate's are exactly
// the document's IncrementalResult entries.
func TestOnInterval(t *testing.T) {
	for _, noSub := range []bool{false, true} {
		var out bytes.Buffer
		var got []Interval
		c := New(&out, Options{Format: FormatJSON, Connections: 2, MinConnections: 1, NoSubInt: noSub,
			Now: fixedClock(1796009000e9), OnInterval: func(iv Interval) { got = append(got, iv) }})
		c.Activate(testInfo(3))
		for k := 1; k <= 3; k++ {
			for conn := range 2 {
				c.Add(conn, fakeResult(k, conn, false))
			}
		}
		c.ConnEnded(true)
		c.ConnEnded(true)
		c.Finish()
		var seq []int
		var aggs []string
		for _, iv := range got {
			seq = append(seq, iv.Conn)
			if iv.Conn == -1 {
				aggs = append(aggs, string(render(iv.res.object(), false)))
			}
		}
		if want := []int{0, 1, -1, 0, 1, -1, 0, 1, -1}; fmt.Sprint(seq) != fmt.Sprint(want) {
			t.Errorf("-s %v: hook order %v, want %v", noSub, seq, want)
		}
		c0 := got[0]
		if c0.Number != 1 || c0.Capacity <= 0 || c0.Loss != 1 || c0.Active != 2 {
			t.Errorf("connection 0's first Sub-Interval: %+v", c0)
		}
		if a := got[2]; a.Capacity != got[0].Capacity+got[1].Capacity || a.Loss != got[0].Loss+got[1].Loss {
			t.Errorf("aggregate %+v is not the sum of %+v and %+v", a, got[0], got[1])
		}
		if noSub {
			continue
		}
		var doc struct {
			Output struct{ IncrementalResult []json.RawMessage }
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		for i, raw := range doc.Output.IncrementalResult {
			if i >= len(aggs) || string(raw) != aggs[i] {
				t.Errorf("IncrementalResult[%d] %s, hook %v", i, raw, aggs)
			}
		}
	}
}
