package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/dataphase"
)

const nd = dataphase.NoDelay

// sub builds a Sub-Interval result; dv and rtt are min, max(, sum, count).
func sub(dgrams uint32, loss uint32, dv [4]uint32, rtt [2]uint32, rttSum, rttCnt, accum uint32, cdm int32, rttMinimum uint32, wall int64) dataphase.SubIntervalResult {
	return dataphase.SubIntervalResult{
		Stats: dataphase.SubIntervalStats{
			RxDatagrams: dgrams, RxBytes: uint64(dgrams) * 1222, DeltaTime: 1000000, SeqErrLoss: loss,
			DelayVarMin: dv[0], DelayVarMax: dv[1], DelayVarSum: dv[2], DelayVarCnt: dv[3],
			RTTVarMin: rtt[0], RTTVarMax: rtt[1], AccumTime: accum,
		},
		ClockDeltaMin: cdm, ClockDeltaSet: true, RTTMinimum: rttMinimum, RTTSum: rttSum, RTTCnt: rttCnt, Wall: 1796009000e9 + wall,
	}
}

var noDV = [4]uint32{nd, 0, 0, 0}

func testInfo(subInts int) TestInfo {
	return TestInfo{TestIntTime: subInts, SubIntPeriod: 1000, TrialInt: 50, LowThresh: 30, UpperThresh: 90,
		IgnoreOooDup: true, SRIndex: dataphase.AutoRateIndex, SlowAdjThresh: 3, HighSpeedDelta: 10, SeqErrThresh: 10,
		ConnMin: 1, ConnMax: 2, Jumbo: true, Hosts: []Host{{"localhost", "127.0.0.1", 24601}}}
}

// TestAggregation follows OB-UDPST 9.0.0's aggregation (the package doc)
// through two connections:
// the aggregate is emitted when all active connections contributed; a
// connection that starts its next Sub-Interval first flushes the pending
// aggregate (OB-UDPST then merges the late connection's Sub-Interval into
// the next aggregate); results beyond NumberTestSubIntervals are ignored;
// Finish flushes what is pending. Rates are sums of connection rates.
func TestAggregation(t *testing.T) {
	var out bytes.Buffer
	c := New(&out, Options{Connections: 2, MinConnections: 1, Now: fixedClock(1796009000e9)})
	c.Activate(testInfo(3))
	lines := func() []string { return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") }

	c.Add(0, sub(1000, 10, [4]uint32{1, 5, 30, 10}, [2]uint32{nd, 0}, 4, 2, 1000, -2, nd, 1e9))
	if out.Len() != 0 {
		t.Fatalf("aggregate emitted before every connection contributed: %q", out.String())
	}
	c.Add(1, sub(500, 0, [4]uint32{0, 2, 10, 10}, [2]uint32{1, 3}, 6, 2, 1001, -1, 2, 2e9))
	// 10 + 5 Mbps (the merged counts over the summed durations would say 7.5);
	// RTT avg(4+6, 2+2) = 2.5 rounds up; Seconds from the last connection.
	want := []string{"Sub-Interval[1](sec):   1.0, Delivered(%):  99.34, Loss/OoO/Dup: 10/0/0, OWDVar(ms): 0/2/5, RTTVar(ms): 1/3/3, Mbps(L3/IP): 15.00"}
	c.Add(0, sub(2000, 0, noDV, [2]uint32{nd, 0}, 0, 0, 2000, -3, nd, 3e9))
	c.Add(0, sub(2000, 0, noDV, [2]uint32{nd, 0}, 0, 0, 3000, -3, nd, 4e9)) // flushes #2 (connection 1 is late)
	want = append(want, "Sub-Interval[2](sec):   2.0, Delivered(%): 100.00, Loss/OoO/Dup: 0/0/0, OWDVar(ms): 0/0/0, RTTVar(ms): 0/0/0, Mbps(L3/IP): 20.00")
	c.Add(1, sub(500, 0, noDV, [2]uint32{nd, 0}, 0, 0, 2002, -1, 2, 5e9)) // completes #3 with connection 0's third
	want = append(want, "Sub-Interval[3](sec):   2.0, Delivered(%): 100.00, Loss/OoO/Dup: 0/0/0, OWDVar(ms): 0/0/0, RTTVar(ms): 0/0/0, Mbps(L3/IP): 25.00")
	c.Add(1, sub(1000, 0, noDV, [2]uint32{nd, 0}, 0, 0, 3003, -1, 2, 6e9))
	c.Add(0, sub(9000, 0, noDV, [2]uint32{nd, 0}, 0, 0, 4000, -9, nd, 7e9)) // a fourth: beyond 3 s / 1 s, ignored
	if got := lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("before Finish:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c.ConnEnded(true)
	c.ConnEnded(true)
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	want = append(want,
		"Sub-Interval[4](sec):   3.0, Delivered(%): 100.00, Loss/OoO/Dup: 0/0/0, OWDVar(ms): 0/0/0, RTTVar(ms): 0/0/0, Mbps(L3/IP): 10.00",
		// OWD avg = avg(2+0+0+0, 4) = 1; RTT avg over all samples = avg(10, 4) = 3; Mbps = (15+20+25+10)/4
		"Downstream Summary Delivered(%):  99.86, Loss/OoO/Dup: 10/0/0, OWDVar(ms): 0/1/5, RTTVar(ms): 0/3/3, Mbps(L3/IP): 17.50",
		"Downstream Minimum One-Way Delay(ms): -3 [w/clock diff], Round-Trip Time(ms): 2, Active Connections: 2",
		// L2/L1/VLAN of the maximum-L3 Sub-Interval: sums over its connections
		"Downstream Maximum Mbps(L3/IP): 25.00, Mbps(L2/Eth): 25.28, Mbps(L1/Eth): 25.36, Mbps(L1/Eth+VLAN): 25.44")
	if got := lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c.ErrorStatus() != 0 {
		t.Errorf("ErrorStatus %d", c.ErrorStatus())
	}

	// The same results as JSON.
	v, err := parseOrdered(c.Document(FormatJSON))
	if err != nil {
		t.Fatal(err)
	}
	o := fObj(t, v.(*jobj), "Output")
	inc := field(t, o, "IncrementalResult").(jarr)
	check := func(obj *jobj, key, want string) {
		t.Helper()
		if got := leafText(field(t, obj, key)); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	check(inc[0].(*jobj), "MinOnewayDelay", "-0.002") // clockDeltaMin then, + OWD min 0
	check(inc[0].(*jobj), "LossRatio", "0.006622517")
	check(inc[0].(*jobj), "RTTAvg", "0.003")
	check(inc[2].(*jobj), "Seconds", "2.0")
	check(inc[2].(*jobj), "TimeOfSubInterval", `"2026-11-30T03:23:25.000000Z"`)
	sum, atMax := fObj(t, o, "Summary"), fObj(t, o, "AtMax")
	check(sum, "Intervals", "4")
	check(sum, "IPLayerCapacitySummary", "17.50")
	check(sum, "MinOnewayDelaySummary", "-0.003")
	check(sum, "MinRTTSummary", "0.002")
	check(atMax, "TimeOfMax", `"2026-11-30T03:23:25.000000Z"`)
	check(atMax, "MaxETHCapacityWithFCSVLAN", "25.44")
	check(atMax, "MinOnewayDelayAtMax", "-0.003") // the final clockDeltaMin
	check(atMax, "RTTAvg", "0.0")
	check(o, "Status", `"Complete"`)
}

// TestConnectionFailure: a connection that ends abnormally lowers the active
// count, which completes the pending aggregate without it; with fewer than
// the minimum the run ends without results.
func TestConnectionFailure(t *testing.T) {
	var out bytes.Buffer
	c := New(&out, Options{Connections: 2, MinConnections: 1, Verbose: true})
	c.Activate(testInfo(5))
	c.Add(1, sub(1000, 0, noDV, [2]uint32{nd, 0}, 0, 0, 1000, 0, nd, 1e9))
	c.Warning(4, "[1]LOCAL WARNING: Incoming traffic has completely stopped [Server 127.0.0.1:24601]")
	c.ConnEnded(false)
	if c.CheckMinConnections() {
		t.Fatal("one connection left is enough")
	}
	c.ConnEnded(true)
	c.Finish()
	got := out.String()
	for _, want := range []string{
		"[2]Sub-Interval[1](sec):   1.0, Delivered(%): 100.00, Loss/OoO/Dup: 0/0/0, OWDVar(ms): 0/0/0, RTTVar(ms): 0/0/0, Mbps(L3/IP): 10.00\n" +
			"[1]LOCAL WARNING: Incoming traffic has completely stopped [Server 127.0.0.1:24601]\n" +
			"[0]Sub-Interval[1](sec):   1.0, Delivered(%): 100.00, Loss/OoO/Dup: 0/0/0, OWDVar(ms): 0/0/0, RTTVar(ms): 0/0/0, Mbps(L3/IP): 10.00\n",
		"[0]Downstream Minimum One-Way Delay(ms): 0 [w/clock diff], Round-Trip Time(ms): 0, Active Connections: 1\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if c.ErrorStatus() != 4 {
		t.Errorf("ErrorStatus %d, want the warning 4", c.ErrorStatus())
	}
	v, _ := parseOrdered(c.Document(FormatJSON))
	o := fObj(t, v.(*jobj), "Output")
	if got := leafText(field(t, o, "Status")); got != `"Error_Other"` {
		t.Errorf("Status %s", got)
	}
	if n := fInt(t, field(t, o, "IncrementalResult").(jarr)[0].(*jobj), "ActiveConnections"); n != 1 {
		t.Errorf("ActiveConnections %d, want 1", n)
	}
}

// TestFailureAfterActivation: below the minimum after activation, Output
// has only its start fields, EOMTime and Status, and text has no results.
func TestFailureAfterActivation(t *testing.T) {
	for _, f := range []Format{FormatText, FormatJSON} {
		var out bytes.Buffer
		c := New(&out, Options{Format: f, Connections: 1, MinConnections: 1})
		c.Activate(testInfo(5))
		c.Add(0, sub(1000, 0, noDV, [2]uint32{nd, 0}, 0, 0, 1000, 0, nd, 1e9))
		c.Warning(4, "LOCAL WARNING: Incoming traffic has completely stopped [Server 127.0.0.1:24601]")
		c.ConnEnded(false)
		if !c.CheckMinConnections() {
			t.Fatal("CheckMinConnections = false")
		}
		c.Add(0, sub(1000, 0, noDV, [2]uint32{nd, 0}, 0, 0, 2000, 0, nd, 2e9)) // too late, ignored
		c.Finish()
		if c.ErrorStatus() != 200 {
			t.Errorf("ErrorStatus %d, want 200", c.ErrorStatus())
		}
		if f == FormatText {
			if strings.Contains(out.String(), "Summary") || strings.Count(out.String(), "\n") != 3 {
				t.Errorf("text output:\n%s", out.String())
			}
			continue
		}
		v, err := parseOrdered(out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		doc := v.(*jobj)
		if got := strings.Join(doc.keys, ","); got != "IPLayerMaxConnections,IPLayerMaxIncrementalResult,IPLayerCapSupported,Input,Output,ErrorStatus,ErrorMessage,ErrorMessage2" {
			t.Errorf("top-level keys %s", got)
		}
		if got := strings.Join(fObj(t, doc, "Output").keys, ","); got != "BOMTime,TmaxUsed,TestInterval,TmaxRTTUsed,TimestampResolutionUsed,EOMTime,Status" {
			t.Errorf("Output keys %s", got)
		}
	}
}

func TestBimodal(t *testing.T) {
	run := func(bimodal int, f Format) string {
		var out bytes.Buffer
		info := testInfo(3)
		info.Bimodal = bimodal
		c := New(&out, Options{Format: f, Connections: 1, MinConnections: 1, Now: fixedClock(1796009000e9)})
		c.Activate(info)
		for k, d := range []uint32{100, 300, 200} {
			c.Add(0, sub(d, 0, noDV, [2]uint32{nd, 0}, 0, 0, uint32(1000*k+1000), 0, nd, int64(k+1)*1e9))
		}
		c.ConnEnded(true)
		c.Finish()
		return out.String()
	}
	got := run(1, FormatText)
	want := "Downstream Sum[1-1] Delivered(%): 100.00, Loss/OoO/Dup: 0/0/0, OWDVar(ms): 0/0/0, RTTVar(ms): 0/0/0, Mbps(L3/IP): 1.00\n" +
		"Downstream Sum[2-3] Delivered(%): 100.00, Loss/OoO/Dup: 0/0/0, OWDVar(ms): 0/0/0, RTTVar(ms): 0/0/0, Mbps(L3/IP): 2.50\n" +
		"Downstream Minimum One-Way Delay(ms): 0 [w/clock diff], Round-Trip Time(ms): 0, Active Connections: 1\n" +
		"Downstream Max[1-1] Mbps(L3/IP): 1.00, Mbps(L2/Eth): 1.01, Mbps(L1/Eth): 1.01, Mbps(L1/Eth+VLAN): 1.02\n" +
		"Downstream Max[2-3] Mbps(L3/IP): 3.00, Mbps(L2/Eth): 3.03, Mbps(L1/Eth): 3.04, Mbps(L1/Eth+VLAN): 3.05\n"
	if !strings.HasSuffix(got, want) {
		t.Errorf("bimodal text:\n%s\nwant it to end with\n%s", got, want)
	}
	// A bimodal count covering every Sub-Interval: one line each, and
	// OB-UDPST's JSON then lacks ModalSummary, ModalResult and
	// ECNBleachingDetected altogether.
	got = run(3, FormatText)
	if !strings.Contains(got, "Downstream Sum[1-3] ") || !strings.Contains(got, "Downstream Max[1-3] ") || strings.Count(got, "Sum[") != 1 {
		t.Errorf("bimodal count = Sub-Intervals:\n%s", got)
	}
	v, _ := parseOrdered([]byte(run(3, FormatJSON)))
	o := fObj(t, v.(*jobj), "Output")
	if keys := strings.Join(o.keys, ","); keys != "BOMTime,TmaxUsed,TestInterval,TmaxRTTUsed,TimestampResolutionUsed,IncrementalResult,Summary,AtMax,EOMTime,Status" {
		t.Errorf("Output keys %s", keys)
	}
	v, _ = parseOrdered([]byte(run(1, FormatJSON)))
	o = fObj(t, v.(*jobj), "Output")
	ms := field(t, o, "ModalSummary").(jarr)
	if len(ms) != 1 || fInt(t, ms[0].(*jobj), "Mode") != 2 || fInt(t, ms[0].(*jobj), "Intervals") != 2 || fInt(t, fObj(t, o, "Summary"), "Intervals") != 1 {
		t.Errorf("ModalSummary %s", render(ms, false))
	}
}

// TestOutputOptions: -s, -r, jsonb, and our skipped-Burst figures, which
// add a line of their own and a separate JSON key but change no OB-UDPST
// line or key.
func TestOutputOptions(t *testing.T) {
	run := func(opt Options, skips bool) string {
		var out bytes.Buffer
		opt.Connections, opt.MinConnections, opt.Now = 1, 1, fixedClock(1796009000e9)
		c := New(&out, opt)
		c.Activate(testInfo(2))
		for k := range 2 {
			r := sub(1000, 10, noDV, [2]uint32{nd, 0}, 0, 0, uint32(1000*k+1000), 0, nd, int64(k+1)*1e9)
			r.SenderPlanned, r.SenderDelivered = 10000, 10000
			if skips && k == 1 {
				r.SkippedBursts, r.SkippedDgrams, r.SenderDelivered = 12, 30, 9970
			}
			c.Add(0, r)
		}
		c.ConnEnded(true)
		c.Finish()
		return out.String()
	}
	plain := run(Options{}, false)
	withSkips := run(Options{}, true)
	skipLine := "Sub-Interval[2]: sender skipped 12 Bursts (0.3 % of plan)\n"
	if strings.Replace(withSkips, skipLine, "", 1) != plain || !strings.Contains(withSkips, "Mbps(L3/IP): 10.00\n"+skipLine) {
		t.Errorf("skip line:\n%s\nplain:\n%s", withSkips, plain)
	}
	for _, skips := range []bool{false, true} {
		// -s: no Sub-Interval line, not even our skip line after one.
		if got := run(Options{NoSubInt: true}, skips); strings.Contains(got, "Sub-Interval") || !strings.Contains(got, "Summary") {
			t.Errorf("-s (skips %v):\n%s", skips, got)
		}
	}
	if js := run(Options{Format: FormatJSON, NoSubInt: true, Extensions: true}, true); !strings.Contains(js, `"SkippedBursts":12`) || strings.Contains(js, `"Intervals":[`) {
		t.Errorf("json -s with skips: totals without the per-Sub-Interval list: %s", js)
	}
	if got := run(Options{LossRatio: true}, false); !strings.Contains(got, "Sub-Interval[1](sec):   1.0, LossRatio: 9.90E-03, Loss/OoO/Dup: 10/0/0,") ||
		!strings.Contains(got, "Downstream Summary LossRatio: 9.90E-03, ") {
		t.Errorf("-r:\n%s", got)
	}
	brief := run(Options{Format: FormatJSONBrief, NoSubInt: true}, false)
	if !strings.HasPrefix(brief, `{"Output":{"BOMTime":"2026-11-30T03:23:20.001000Z","TmaxUsed":1000,"TestInterval":2,"TmaxRTTUsed":3000,"TimestampResolutionUsed":1,"Summary":{"Mode":1,`) ||
		strings.Contains(brief, "Input") || strings.Contains(brief, ExtensionKey) {
		t.Errorf("jsonb -s: %s", brief)
	}
	// By default OB-UDPST's keys only (the text still warns, above); the
	// skips under our key with Extensions.
	if js := run(Options{Format: FormatJSON}, true); strings.Contains(js, `"`+ExtensionKey+`":`) {
		t.Errorf("json with skips, without Extensions:\n%s", js)
	}
	js := run(Options{Format: FormatJSON, Extensions: true}, true)
	ext := `,"udpstp":{"SkippedBursts":12,"SkippedDatagrams":30,"WithheldDatagrams":0,"SkippedPercentOfPlan":0.15,"PlannedDatagrams":20000,"SentDatagrams":19970,` +
		`"Intervals":[{"Interval":2,"SkippedBursts":12,"SkippedDatagrams":30,"WithheldDatagrams":0,"SkippedPercentOfPlan":0.30}]}}` + "\n"
	if !strings.HasSuffix(js, ext) || strings.Replace(js, ext, "}\n", 1) != run(Options{Format: FormatJSON, Extensions: true}, false) {
		t.Errorf("json with skips:\n%s", js)
	}
}

// TestConcurrentConnections reports from one goroutine per connection, as
// the client does; run with -race.
func TestConcurrentConnections(t *testing.T) {
	var out bytes.Buffer
	info := testInfo(5)
	info.ConnMax = 4
	c := New(&out, Options{Format: FormatJSON, Connections: 4, MinConnections: 4})
	c.Activate(info)
	done := make(chan bool)
	for conn := range 4 {
		go func() {
			for k := 1; k <= 6; k++ {
				c.Add(conn, fakeResult(k, conn, false))
			}
			c.ConnEnded(true)
			done <- true
		}()
	}
	for range 4 {
		<-done
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	v, err := parseOrdered(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	o := fObj(t, v.(*jobj), "Output")
	if n := len(field(t, o, "IncrementalResult").(jarr)); n < 5 || n > 20 {
		t.Errorf("%d aggregate Sub-Intervals", n)
	}
	if c.ErrorStatus() != 0 {
		t.Errorf("ErrorStatus %d", c.ErrorStatus())
	}
}
