package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/dataphase"
)

// connsDoc is what the per-connection figures look like to a reader.
type connsDoc struct {
	Output struct {
		IncrementalResult []struct {
			IPLayerCapacity float64
			LossCount       int
		}
	}
	Udpstp *struct {
		SkippedBursts *int
		Connections   []struct {
			Connection       int
			IPLayerCapacity  []float64
			LossCount        []int
			ReorderedCount   []int
			ReplicatedCount  []int
			SendingRateIndex []int
			SendingRateMbps  []float64
		}
	} `json:"udpstp"`
}

// runConns feeds n Sub-Intervals of conns connections, the Load Sender at
// row 100+10k+conn of the default table when upstream, and returns the
// JSON document, with Options.Extensions (the figures are ours).
func runConns(t *testing.T, conns, n int, upstream bool, opt Options) connsDoc {
	t.Helper()
	table := dataphase.BuildRateTable(dataphase.TableOptions{})
	var out bytes.Buffer
	opt.Format, opt.Connections, opt.MinConnections, opt.Now = FormatJSON, conns, conns, fixedClock(1796009000e9)
	opt.Extensions = true
	c := New(&out, opt)
	info := testInfo(n)
	info.ConnMax, info.Upstream = conns, upstream
	c.Activate(info)
	for k := 1; k <= n; k++ {
		for conn := range conns {
			r := fakeResult(k, conn, false)
			if upstream {
				r.SendRate, r.SendRateSet = table[100+10*k+conn], true
			}
			c.Add(conn, r)
		}
	}
	for range conns {
		c.ConnEnded(true)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	var doc connsDoc
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return doc
}

// Each connection's own Sub-Intervals are in the document, in arrays that
// line up with IncrementalResult, and they add up to the aggregate; the
// rows of an upstream test are named by index and rate.
func TestPerConnectionFigures(t *testing.T) {
	const conns, n = 3, 4
	doc := runConns(t, conns, n, true, Options{})
	if doc.Udpstp == nil || len(doc.Udpstp.Connections) != conns {
		t.Fatalf("udpstp key %+v, want %d connections", doc.Udpstp, conns)
	}
	if doc.Udpstp.SkippedBursts != nil {
		t.Error("skip figures present without skips")
	}
	if len(doc.Output.IncrementalResult) != n {
		t.Fatalf("%d aggregate Sub-Intervals, want %d", len(doc.Output.IncrementalResult), n)
	}
	table := dataphase.BuildRateTable(dataphase.TableOptions{})
	for i, cs := range doc.Udpstp.Connections {
		if cs.Connection != i+1 {
			t.Errorf("connection %d numbered %d", i, cs.Connection)
		}
		for _, l := range []int{len(cs.IPLayerCapacity), len(cs.LossCount), len(cs.ReorderedCount), len(cs.ReplicatedCount), len(cs.SendingRateIndex), len(cs.SendingRateMbps)} {
			if l != n {
				t.Fatalf("connection %d: arrays of %d, want %d: %+v", i+1, l, n, cs)
			}
		}
		for k := range n {
			row := 100 + 10*(k+1) + i
			if cs.SendingRateIndex[k] != row || math.Abs(cs.SendingRateMbps[k]-table[row].L3Mbps(false)) > 0.005 {
				t.Errorf("connection %d Sub-Interval %d: row %d at %.2f Mbps, want %d at %.2f", i+1, k+1,
					cs.SendingRateIndex[k], cs.SendingRateMbps[k], row, table[row].L3Mbps(false))
			}
			if want := int((k + 1) % 3); cs.LossCount[k] != want {
				t.Errorf("connection %d Sub-Interval %d: loss %d, want %d", i+1, k+1, cs.LossCount[k], want)
			}
		}
	}
	for k, agg := range doc.Output.IncrementalResult {
		sum, loss := 0.0, 0
		for _, cs := range doc.Udpstp.Connections {
			sum += cs.IPLayerCapacity[k]
			loss += cs.LossCount[k]
		}
		if math.Abs(sum-agg.IPLayerCapacity) > 0.01*conns || loss != agg.LossCount {
			t.Errorf("Sub-Interval %d: connections add to %.2f Mbps, %d lost; aggregate %.2f, %d", k+1, sum, loss, agg.IPLayerCapacity, agg.LossCount)
		}
	}
}

// Downstream, several connections still get their own figures, without
// rows (the client never learns the server's); one downstream connection
// gets none (the aggregate is that connection), nor does -s.
func TestPerConnectionFiguresWhenShown(t *testing.T) {
	doc := runConns(t, 2, 3, false, Options{})
	if doc.Udpstp == nil || len(doc.Udpstp.Connections) != 2 {
		t.Fatalf("downstream, 2 connections: %+v", doc.Udpstp)
	}
	for _, cs := range doc.Udpstp.Connections {
		if cs.SendingRateIndex != nil || cs.SendingRateMbps != nil || len(cs.IPLayerCapacity) != 3 {
			t.Errorf("downstream connection %+v", cs)
		}
	}
	if doc := runConns(t, 1, 3, false, Options{}); doc.Udpstp != nil {
		t.Errorf("one downstream connection has the udpstp key: %+v", doc.Udpstp)
	}
	if doc := runConns(t, 1, 3, true, Options{}); doc.Udpstp == nil || len(doc.Udpstp.Connections) != 1 || len(doc.Udpstp.Connections[0].SendingRateMbps) != 3 {
		t.Errorf("one upstream connection: %+v, want its rows", doc.Udpstp)
	}
	if doc := runConns(t, 2, 3, true, Options{NoSubInt: true}); doc.Udpstp != nil {
		t.Errorf("-s has per-connection Sub-Intervals: %+v", doc.Udpstp)
	}
}

// A row that is not in the table of the test's -j/-T (a server with other
// rows) keeps its rate and has index -1.
func TestForeignRow(t *testing.T) {
	var out bytes.Buffer
	c := New(&out, Options{Format: FormatJSON, Connections: 1, MinConnections: 1, Extensions: true})
	info := testInfo(1)
	info.Upstream = true
	c.Activate(info)
	r := fakeResult(1, 0, false)
	r.SendRate = dataphase.SendingRate{TxInterval1: 1000, UDPPayload1: 1000, BurstSize1: 3}
	r.SendRateSet = true
	c.Add(0, r)
	c.ConnEnded(true)
	c.Finish()
	if !strings.Contains(out.String(), `"SendingRateIndex":[-1],"SendingRateMbps":[24.67]`) {
		t.Errorf("foreign row: %s", out.String())
	}
}
