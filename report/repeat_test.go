package report

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/dataphase"
)

func TestStatMedian(t *testing.T) {
	for _, tt := range []struct {
		v                        []float64
		median, min, max, spread float64
	}{
		{[]float64{7}, 7, 7, 7, 0},
		{[]float64{3, 1, 2}, 2, 1, 3, 2},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4, 3}, // even: the mean of the middle two
		{[]float64{10, 20}, 15, 10, 20, 10},
		{[]float64{5, 5, 1, 9, 5, 2}, 5, 1, 9, 8},
	} {
		s := newStat(tt.v)
		if s.median != tt.median || s.min != tt.min || s.max != tt.max || s.spread() != tt.spread || s.n != len(tt.v) {
			t.Errorf("%v: median %v min %v max %v spread %v (n %d)", tt.v, s.median, s.min, s.max, s.spread(), s.n)
		}
	}
	in := []float64{3, 1, 2}
	newStat(in)
	if in[0] != 3 || in[1] != 1 {
		t.Error("newStat sorted its argument")
	}
}

// capacityRun is a finished one-connection test whose five Sub-Intervals
// run at mbps (L3) with the RTT variation averaging rttMs.
func capacityRun(t *testing.T, upstream bool, mbps float64, rttMs uint32) *Collector {
	t.Helper()
	c := New(&bytes.Buffer{}, Options{Format: FormatJSON, Now: fixedClock(1796009000e9)})
	c.Activate(TestInfo{Upstream: upstream, TestIntTime: 5, SubIntPeriod: 1000, TrialInt: 50, ConnMax: 1, ConnMin: 1})
	d := uint32(mbps * 100) // 1250 bytes of L3 each, in 1 s
	for k := 1; k <= 5; k++ {
		c.Add(0, dataphase.SubIntervalResult{Seq: uint32(k),
			Stats: dataphase.SubIntervalStats{RxDatagrams: d, RxBytes: uint64(d) * 1222, DeltaTime: 1_000_000,
				DelayVarMax: 2 * rttMs, DelayVarSum: 10 * rttMs, DelayVarCnt: 10, RTTVarMax: 2 * rttMs, AccumTime: uint32(1000 * k)},
			RTTMinimum: 1, ClockDeltaSet: true, RTTSum: 10 * rttMs, RTTCnt: 10})
	}
	c.ConnEnded(true)
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	return c
}

// aggregateDoc is the Repeat's document, decoded.
func aggregateDoc(t *testing.T, r *Repeat) (runs []any, agg map[string]any) {
	t.Helper()
	var doc struct {
		Runs      []any
		Aggregate map[string]any
	}
	if err := json.Unmarshal(r.Document(FormatJSON), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Runs, doc.Aggregate
}

func figure(t *testing.T, agg map[string]any, dir, key string) map[string]any {
	t.Helper()
	d, _ := agg[dir].(map[string]any)
	f, _ := d[key].(map[string]any)
	if f == nil {
		t.Fatalf("no %s %s in %v", dir, key, agg)
	}
	return f
}

// TestRepeatFailedRun: three runs, the second failed: it is counted,
// listed with its message and status in the document and the table, and
// stays in Runs; the statistics are over the two that completed (the
// median of two is their mean); the status is the failure's.
func TestRepeatFailedRun(t *testing.T) {
	r := NewRepeat(3, 2*time.Second)
	r.Add(capacityRun(t, false, 100, 4))
	r.Add(failedCollector(t, 1))
	r.Add(capacityRun(t, false, 90, 10))
	if got := r.ErrorStatus(); got != StatusMinConns {
		t.Errorf("status %d, want the failed run's 200", got)
	}
	runs, agg := aggregateDoc(t, r)
	if len(runs) != 3 {
		t.Fatalf("%d runs in the document", len(runs))
	}
	for k, want := range map[string]float64{"RunsRequested": 3, "Runs": 3, "RunsCompleted": 2, "RunsFailed": 1, "Interrupted": 0, "PauseSeconds": 2, "ErrorStatus": 200} {
		if agg[k] != want {
			t.Errorf("%s = %v, want %v", k, agg[k], want)
		}
	}
	st, _ := agg["RunStatus"].([]any)
	if len(st) != 3 {
		t.Fatalf("RunStatus %v", agg["RunStatus"])
	}
	second := st[1].(map[string]any)
	if second["ErrorStatus"] != 200.0 || second["Completed"] != 0.0 || !strings.Contains(second["ErrorMessage"].(string), "Timeout awaiting response") {
		t.Errorf("the failed run: %v", second)
	}
	if _, ok := agg["Upstream"]; ok {
		t.Error("an upstream aggregate for downstream runs")
	}
	if d := agg["Downstream"].(map[string]any); d["Runs"] != 2.0 {
		t.Errorf("downstream over %v runs, want 2", d["Runs"])
	}
	max := figure(t, agg, "Downstream", "MaxIPLayerCapacity")
	if max["Median"] != 95.0 || max["Min"] != 90.0 || max["Max"] != 100.0 || max["Spread"] != 10.0 {
		t.Errorf("maximum %v", max)
	}
	rtt := figure(t, agg, "Downstream", "RTTAvg")
	if rtt["Median"] != 0.007 || rtt["Min"] != 0.004 || rtt["Max"] != 0.01 || rtt["Spread"] != 0.006 {
		t.Errorf("RTT variation average %v", rtt)
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	for _, want := range []string{
		"Repeat: 3 of 3 runs, 2 completed, 1 failed",
		"Run 2 failed, ErrorStatus 200: ERROR: Minimum required connections (1) unavailable / WARNING: Timeout awaiting response",
		"200 failed",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	var medianRow string
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "median") {
			medianRow = l
		}
	}
	if f := strings.Fields(medianRow); len(f) < 6 || f[1] != "Downstream" || f[2] != "2" || f[5] != "95.00" {
		t.Errorf("median row %q:\n%s", medianRow, table)
	}
}

// TestRepeatEvenCount: four completed runs, upstream: the median is the
// mean of the middle two.
func TestRepeatEvenCount(t *testing.T) {
	r := NewRepeat(4, 0)
	for _, m := range []float64{40, 10, 30, 20} {
		r.Add(capacityRun(t, true, m, 1))
	}
	if r.ErrorStatus() != 0 {
		t.Errorf("status %d", r.ErrorStatus())
	}
	_, agg := aggregateDoc(t, r)
	if agg["RunsCompleted"] != 4.0 || agg["RunsFailed"] != 0.0 {
		t.Errorf("counts %v", agg)
	}
	for _, key := range []string{"MaxIPLayerCapacity", "IPLayerCapacitySummary"} {
		if f := figure(t, agg, "Upstream", key); f["Median"] != 25.0 || f["Spread"] != 30.0 {
			t.Errorf("%s %v", key, f)
		}
	}
}

// TestRepeatBidirectional: runs of pairs aggregate per direction, with
// the idle baseline's figures; an interrupted repeat says how many runs
// it did not make, and its status is 255.
func TestRepeatBidirectional(t *testing.T) {
	r := NewRepeat(3, 0)
	info := TestInfo{TestIntTime: 5, SubIntPeriod: 1000, ConnMax: 1, ConnMin: 1, Bimodal: 2, SuppCount: 2}
	up, down := info, info
	up.Upstream = true
	for range 2 {
		r.Add(&Bidirectional{Up: fakeCollector(t, io.Discard, up, 5), Down: fakeCollector(t, io.Discard, down, 5)})
	}
	r.Interrupt()
	if r.ErrorStatus() != StatusGeneral {
		t.Errorf("status %d, want 255", r.ErrorStatus())
	}
	_, agg := aggregateDoc(t, r)
	if agg["Interrupted"] != 1.0 || agg["RunsCompleted"] != 2.0 {
		t.Errorf("aggregate %v", agg)
	}
	for _, dir := range []string{"Upstream", "Downstream"} {
		figure(t, agg, dir, "MaxIPLayerCapacity")
		figure(t, agg, dir, "IdleRTTAvg")
	}
	var b strings.Builder
	r.WriteTable(&b)
	if !strings.Contains(b.String(), "Interrupted: 1 of 3 runs not run") || !strings.Contains(b.String(), "Idle RTTVar avg") {
		t.Errorf("table:\n%s", b.String())
	}
	if NewRepeat(2, 0).ErrorStatus() != StatusGeneral {
		t.Error("a repeat that ran nothing succeeded")
	}
}
