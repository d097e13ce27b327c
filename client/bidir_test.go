package client

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/control"
	"github.com/udpstp/udpstp/dataphase"
	"github.com/udpstp/udpstp/internal/testkit/memnet"
)

// testPlan runs cfg with plan over a client network on w whose Data Phases
// play script; observe, if set, sees each event too (with the cancel of
// the run's context). A run that does not end by itself within a minute
// is a failure, not a hang: the interrupt then ends it (this fires only
// when the code is wrong).
func testPlan(t *testing.T, w *memnet.Wire, cfg *control.ClientConfig, plan Plan, script func(*memnet.DataPhase), observe func(Event, context.CancelFunc)) *outcome {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stuck atomic.Bool
	watchdog := time.AfterFunc(time.Minute, func() { stuck.Store(true); cancel() })
	defer watchdog.Stop()
	var out, errs bytes.Buffer
	o := &outcome{}
	o.status = Run(ctx, cfg, Options{
		Network: memNetwork{&memnet.Net{Wire: w, NextPort: 50000, Script: script}},
		Out:     &out, Stderr: &errs, Plan: plan,
		Observe: func(e Event) {
			o.events = append(o.events, e)
			if observe != nil {
				observe(e, cancel)
			}
		},
	})
	o.out = out.String()
	if stuck.Load() {
		t.Fatalf("the run did not end by itself; events %+v", o.events)
	}
	if errs.Len() > 0 {
		t.Errorf("stderr: %s", errs.String())
	}
	if cfg.Format != "" {
		if err := json.Unmarshal(out.Bytes(), &o.doc); err != nil {
			t.Fatalf("report: %v\n%s", err, o.out)
		}
	}
	if n := len(o.events); n == 0 || o.events[n-1].Kind != EventEnd || o.events[n-1].Status != o.status {
		t.Errorf("the last event is not EventEnd with the status: %+v", o.events)
	}
	checkHalvesOrder(t, o.events)
	return o
}

// checkHalvesOrder is checkOrder for each half (and each run) of its own.
func checkHalvesOrder(t *testing.T, events []Event) {
	t.Helper()
	type key struct {
		run int
		up  bool
	}
	byHalf := map[key][]Event{}
	for _, e := range events {
		k := key{e.Run, e.Upstream}
		byHalf[k] = append(byHalf[k], e)
	}
	for _, evs := range byHalf {
		checkOrder(t, evs)
	}
}

// loadedAfter is a client's Data Phase that completes subs Sub-Intervals
// (loadedSub) and ends with the stop handshake.
func loadedAfter(idle, subs int, upMbps, downMbps uint32) func(*memnet.DataPhase) {
	return func(d *memnet.DataPhase) {
		for i := 1; i <= subs; i++ {
			d.Emit(loadedSub(d, i, idle, upMbps, downMbps))
		}
		d.Emit(dataphase.Event{Kind: dataphase.EvEnd, End: dataphase.EndStopped})
	}
}

// loadedSub is Sub-Interval i of d: idle up to idle (a few datagrams,
// 1 ms of RTT variation), then loaded at upMbps (d sends the load) or
// downMbps with RTT variation averaging 30 ms (40 at most) and one-way
// delay variation 20 (30).
func loadedSub(d *memnet.DataPhase, i, idle int, upMbps, downMbps uint32) dataphase.Event {
	mbps := downMbps
	if d.Core.LoadSender() {
		mbps = upMbps
	}
	dgrams, rttMax, rttSum, pdvMax, pdvSum := uint32(10), uint32(2), uint32(10), uint32(1), uint32(0)
	if i > idle {
		dgrams, rttMax, rttSum, pdvMax, pdvSum = mbps*100, 40, 300, 30, 200
	}
	return dataphase.Event{Kind: dataphase.EvSubInterval, SubInt: dataphase.SubIntervalResult{
		Seq: uint32(i),
		Stats: dataphase.SubIntervalStats{RxDatagrams: dgrams, RxBytes: uint64(dgrams) * 1222, DeltaTime: 1_000_000,
			DelayVarMin: 0, DelayVarMax: pdvMax, DelayVarSum: pdvSum, DelayVarCnt: 10,
			RTTVarMin: 0, RTTVarMax: rttMax, AccumTime: uint32(1000 * i)},
		RTTMinimum: 2, ClockDeltaSet: true, RTTSum: rttSum, RTTCnt: 10,
	}}
}

func obj(t *testing.T, m map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, k := range path {
		next, ok := m[k].(map[string]any)
		if !ok {
			t.Fatalf("no object %q in %v", strings.Join(path, "."), m)
		}
		m = next
	}
	return m
}

func num(t *testing.T, m map[string]any, k string) float64 {
	t.Helper()
	v, ok := m[k].(float64)
	if !ok {
		t.Fatalf("no number %q in %v", k, m)
	}
	return v
}

// bidirConfig is a 5 s bidirectional JSON test with the idle baseline the
// command line sets: 2 Sub-Intervals, rate adjustment suppressed.
func bidirConfig(servers ...string) *control.ClientConfig {
	cfg := testConfig(servers...)
	cfg.Bimodal, cfg.Suppress = 2, true
	return cfg
}

// TestRunBidirectional: one upstream and one downstream Test Connection
// to the same server, at once; the document has each direction's
// complete OB-UDPST report (its second mode the loaded phase) and the
// latency under load, also in the result file; the events say which half
// each belongs to.
func TestRunBidirectional(t *testing.T) {
	w := memnet.NewWire()
	srv := startServer(t, w, "127.0.0.1", 40000, nil)
	cfg := bidirConfig("127.0.0.1")
	cfg.OutputFile = filepath.Join(t.TempDir(), "result.json")
	o := testPlan(t, w, cfg, Plan{Bidirectional: true}, loadedAfter(2, 5, 50, 200), nil)
	if o.status != 0 {
		t.Fatalf("status %d\n%s", o.status, o.out)
	}
	if n := srv.Snapshot().Counts[control.CountSetupAccepted]; n != 2 {
		t.Errorf("the server accepted %d Setup Requests, want 2", n)
	}
	ups, downs := 0, 0
	for _, e := range o.events {
		if e.Kind == EventConnected {
			if e.Upstream != (e.Activated.Granted.CmdRequest == control.ActivationUpstream) {
				t.Errorf("connection %d: Upstream %v, granted %d", e.Conn, e.Upstream, e.Activated.Granted.CmdRequest)
			}
			if e.Upstream {
				ups++
			} else {
				downs++
			}
		}
	}
	if ups != 1 || downs != 1 {
		t.Errorf("%d upstream and %d downstream connections", ups, downs)
	}
	for dir, role := range map[string]string{"Upstream": "Sender", "Downstream": "Receiver"} {
		half := obj(t, o.doc, dir)
		if half["ErrorStatus"] != 0.0 || obj(t, half, "Output")["Status"] != "Complete" || obj(t, half, "Input")["Role"] != role {
			t.Errorf("%s: %v", dir, half)
		}
		if in := obj(t, half, "Input"); in["NumberFirstModeTestSubIntervals"] != 2.0 || in["NumberFirstModeSuppSubIntervals"] != 2.0 {
			t.Errorf("%s: the idle baseline is not the first mode: %v", dir, in)
		}
	}
	want := map[string]float64{"Upstream": 50, "Downstream": 200}
	for dir, mbps := range want {
		ul := obj(t, o.doc, "udpstp", "Bidirectional", dir)
		idle, loaded := obj(t, ul, "Idle"), obj(t, ul, "Loaded")
		if ul["Complete"] != 1.0 || idle["FirstInterval"] != 1.0 || idle["LastInterval"] != 2.0 ||
			loaded["FirstInterval"] != 3.0 || loaded["LastInterval"] != 5.0 || ul["OtherDirectionLoadedIntervals"] != 3.0 {
			t.Errorf("%s latency under load: %v", dir, ul)
		}
		if got := num(t, loaded, "MaxIPLayerCapacity"); got < mbps || got > 1.05*mbps {
			t.Errorf("%s: loaded maximum %.2f, want about %.0f (L3 of %.0f Mbit/s of payload)", dir, got, mbps, mbps)
		}
		if num(t, idle, "RTTAvg") != 0.001 || num(t, loaded, "RTTAvg") != 0.030 || num(t, loaded, "RTTMax") != 0.040 ||
			num(t, ul, "RTTAvgIncrease") != 0.029 || num(t, loaded, "PDVAvg") != 0.020 || num(t, ul, "PDVAvgIncrease") != 0.020 {
			t.Errorf("%s delays: idle %v, loaded %v, %v", dir, idle, loaded, ul)
		}
	}
	file, err := os.ReadFile(cfg.OutputFile)
	if err != nil || !bytes.Contains(file, []byte(`"Downstream":`)) || !bytes.Contains(file, []byte(`"RTTAvgIncrease":`)) {
		t.Errorf("result file: %v\n%s", err, file)
	}
}

// TestRunBidirectionalText: the text report has the banner once, each
// half's lines labelled, and the latency-under-load lines at the end.
func TestRunBidirectionalText(t *testing.T) {
	w := memnet.NewWire()
	startServer(t, w, "127.0.0.1", 40000, nil)
	cfg := bidirConfig("127.0.0.1")
	cfg.Format = ""
	o := testPlan(t, w, cfg, Plan{Bidirectional: true}, loadedAfter(2, 5, 50, 200), nil)
	if o.status != 0 {
		t.Fatalf("status %d\n%s", o.status, o.out)
	}
	lines := strings.Split(strings.TrimSuffix(o.out, "\n"), "\n")
	if strings.Count(o.out, "UDP Speed Test\n") != 1 || lines[0] != "UDP Speed Test" {
		t.Errorf("the banner is not printed once, first:\n%s", o.out)
	}
	var ups, downs, latency int
	for _, l := range lines[3:] {
		switch {
		case strings.HasPrefix(l, "[Up]   "):
			ups++
		case strings.HasPrefix(l, "[Down] "):
			downs++
		case strings.HasPrefix(l, "Latency under load") || strings.Contains(l, " Latency Under Load "):
			latency++
		default:
			t.Errorf("unlabelled line %q", l)
		}
	}
	// Header (2), 5 Sub-Intervals, Sum x2, Minimum, Max x2 each; the
	// latency lines: what was measured, one per direction, the RPM.
	if ups != 12 || downs != 12 || latency != 4 {
		t.Errorf("%d upstream, %d downstream, %d latency lines:\n%s", ups, downs, latency, o.out)
	}
	for _, want := range []string{
		"[Up]   Upstream Test Int(sec): 5,",
		"[Down] Downstream Sum[3-5] ",
		"[Up]   Upstream Max[3-5] Mbps(L3/IP): ",
		"\nUpstream Latency Under Load RTTVar(ms): Idle[1-2] 1/2, Loaded[3-5] 30/40 (+29); OWDVar(ms): Idle 0/1, Loaded 20/30 (+20); ",
		"Downstream loaded for 3 Sub-Intervals\n",
	} {
		if !strings.Contains(o.out, want) {
			t.Errorf("text lacks %q:\n%s", want, o.out)
		}
	}
}

// TestRunBidirectionalSeveralServers: -C 2 over two servers is two Test
// Connections of each direction, round robin: each server gets one of
// each, and each half's report lists both hosts.
func TestRunBidirectionalSeveralServers(t *testing.T) {
	w := memnet.NewWire()
	a := startServer(t, w, "127.0.0.1", 40000, nil)
	b := startServer(t, w, "127.0.0.2", 41000, nil)
	cfg := bidirConfig("127.0.0.1", "127.0.0.2")
	cfg.ConnMin, cfg.ConnMax = 2, 2
	o := testPlan(t, w, cfg, Plan{Bidirectional: true}, loadedAfter(2, 5, 50, 200), nil)
	if o.status != 0 {
		t.Fatalf("status %d\n%v", o.status, o.doc)
	}
	for i, s := range []*control.Server{a, b} {
		if n := s.Snapshot().Counts[control.CountSetupAccepted]; n != 2 {
			t.Errorf("server %d accepted %d, want one of each direction", i, n)
		}
	}
	for _, dir := range []string{"Upstream", "Downstream"} {
		in := obj(t, o.doc, dir, "Input")
		if hosts, _ := in["HostList"].([]any); len(hosts) != 2 || in["NumberOfConnections"] != 2.0 {
			t.Errorf("%s: hosts %v, %v connections", dir, in["HostList"], in["NumberOfConnections"])
		}
		// Two connections at 50 (200) Mbit/s each.
		if got := num(t, obj(t, o.doc, "udpstp", "Bidirectional", dir, "Loaded"), "MaxIPLayerCapacity"); got < 100 {
			t.Errorf("%s: loaded maximum %.2f over two connections", dir, got)
		}
	}
}

// TestRunBidirectionalHalfFails: the upstream half loses its Test
// Connection after the idle baseline; the downstream half completes. The
// run's status is the worse one, each half keeps its own, and the
// latency under load says the upstream was not measured and the
// downstream's other direction was not loaded.
func TestRunBidirectionalHalfFails(t *testing.T) {
	w := memnet.NewWire()
	startServer(t, w, "127.0.0.1", 40000, nil)
	down := loadedAfter(2, 5, 50, 200)
	script := func(d *memnet.DataPhase) {
		if !d.Core.LoadSender() {
			down(d)
			return
		}
		for i := 1; i <= 2; i++ {
			d.Emit(loadedSub(d, i, 2, 50, 200))
		}
		d.Emit(dataphase.Event{Kind: dataphase.EvWarning, Code: 3, Text: "WARNING: Incoming status feedback messages lost"})
		d.Emit(dataphase.Event{Kind: dataphase.EvEnd, End: dataphase.EndWatchdog})
	}
	o := testPlan(t, w, bidirConfig("127.0.0.1"), Plan{Bidirectional: true}, script, nil)
	if o.status != 200 {
		t.Errorf("status %d, want the upstream half's 200", o.status)
	}
	if up, dn := obj(t, o.doc, "Upstream")["ErrorStatus"], obj(t, o.doc, "Downstream")["ErrorStatus"]; up != 200.0 || dn != 0.0 {
		t.Errorf("halves' status %v, %v", up, dn)
	}
	ul := obj(t, o.doc, "udpstp", "Bidirectional")
	if u, d := obj(t, ul, "Upstream"), obj(t, ul, "Downstream"); u["Complete"] != 0.0 || d["Complete"] != 1.0 || d["OtherDirectionLoadedIntervals"] != 0.0 {
		t.Errorf("latency under load %v", ul)
	}
}

// TestRunBidirectionalInterrupt: an interrupt stops both halves; the run
// ends with 255 and each half says it was interrupted.
func TestRunBidirectionalInterrupt(t *testing.T) {
	w := memnet.NewWire()
	startServer(t, w, "127.0.0.1", 40000, nil)
	connected := 0
	o := testPlan(t, w, bidirConfig("127.0.0.1"), Plan{Bidirectional: true}, untilStopped, func(e Event, cancel context.CancelFunc) {
		if e.Kind == EventConnected {
			if connected++; connected == 2 {
				cancel()
			}
		}
	})
	if o.status != 255 {
		t.Errorf("status %d, want 255", o.status)
	}
	for _, dir := range []string{"Upstream", "Downstream"} {
		if h := obj(t, o.doc, dir); h["ErrorStatus"] != 255.0 || h["ErrorMessage"] != "ERROR: Test interrupted" {
			t.Errorf("%s: %v %v", dir, h["ErrorStatus"], h["ErrorMessage"])
		}
	}
}
