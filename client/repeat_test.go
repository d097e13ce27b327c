package client

import (
	"bytes"
	"context"
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

// nthFails is complete, except that the Data Phase number n (from 1, in
// the order they start) loses its server: a run that fails.
func nthFails(n int32) func(*memnet.DataPhase) {
	var started atomic.Int32
	return func(d *memnet.DataPhase) {
		if started.Add(1) == n {
			d.Emit(dataphase.Event{Kind: dataphase.EvWarning, Code: 3, Text: "WARNING: Incoming status feedback messages lost"})
			d.Emit(dataphase.Event{Kind: dataphase.EvEnd, End: dataphase.EndWatchdog})
			return
		}
		complete(d)
	}
}

// TestRunRepeat: three complete tests in a row, each in full in the one
// document with the aggregate, also in the result file; the events carry
// each test's number, and each test ends with EventRunEnd.
func TestRunRepeat(t *testing.T) {
	w := memnet.NewWire()
	srv := startServer(t, w, "127.0.0.1", 40000, nil)
	cfg := testConfig("127.0.0.1")
	cfg.OutputFile = filepath.Join(t.TempDir(), "result.json")
	o := testPlan(t, w, cfg, Plan{Repeat: 3}, complete, nil)
	if o.status != 0 {
		t.Fatalf("status %d\n%s", o.status, o.out)
	}
	runs, _ := o.doc["Runs"].([]any)
	if len(runs) != 3 {
		t.Fatalf("%d runs in the document", len(runs))
	}
	for i, r := range runs {
		if doc := r.(map[string]any); doc["ErrorStatus"] != 0.0 || summary(t, doc) == nil {
			t.Errorf("run %d: %v", i+1, doc)
		}
	}
	agg := obj(t, o.doc, "Aggregate")
	if agg["RunsCompleted"] != 3.0 || agg["RunsFailed"] != 0.0 || obj(t, agg, "Downstream")["Runs"] != 3.0 {
		t.Errorf("aggregate %v", agg)
	}
	var ends []int
	for _, e := range o.events {
		if e.Kind != EventEnd && (e.Run < 1 || e.Run > 3) {
			t.Errorf("event %+v without its run", e)
		}
		if e.Kind == EventRunEnd {
			ends = append(ends, e.Run)
		}
	}
	if len(ends) != 3 || ends[0] != 1 || ends[2] != 3 {
		t.Errorf("EventRunEnd for runs %v", ends)
	}
	if n := srv.Snapshot().Counts[control.CountSetupAccepted]; n != 3 {
		t.Errorf("the server accepted %d Setup Requests, want 3", n)
	}
	file, err := os.ReadFile(cfg.OutputFile)
	if err != nil || bytes.Count(file, []byte(`"Status":"Complete"`)) != 3 || !bytes.Contains(file, []byte(`"Aggregate":`)) {
		t.Errorf("result file: %v\n%.500s", err, file)
	}
}

// TestRunRepeatFailure: the second of three tests fails; it is in the
// document and counted, the aggregate is over the other two, and the
// run's status is the failure's.
func TestRunRepeatFailure(t *testing.T) {
	w := memnet.NewWire()
	startServer(t, w, "127.0.0.1", 40000, nil)
	cfg := testConfig("127.0.0.1")
	cfg.Format = ""
	cfg.OutputFile = filepath.Join(t.TempDir(), "result.json")
	o := testPlan(t, w, cfg, Plan{Repeat: 3}, nthFails(2), nil)
	if o.status != 200 {
		t.Errorf("status %d, want 200", o.status)
	}
	for _, want := range []string{"Run 1 of 3\n", "Run 2 of 3\n", "Run 3 of 3\n",
		"Repeat: 3 of 3 runs, 2 completed, 1 failed", "Run 2 failed, ErrorStatus 200: ERROR: Minimum required connections (1) unavailable"} {
		if !strings.Contains(o.out, want) {
			t.Errorf("text lacks %q:\n%s", want, o.out)
		}
	}
	if n := strings.Count(o.out, "UDP Speed Test\n"); n != 1 {
		t.Errorf("%d banners", n)
	}
	file, err := os.ReadFile(cfg.OutputFile)
	if err != nil || !bytes.Contains(file, []byte("\"RunsFailed\":\t1")) || !bytes.Contains(file, []byte("\"RunsCompleted\":\t2")) {
		t.Errorf("result file: %v\n%s", err, file)
	}
}

// TestRunRepeatInterruptInPause: an interrupt during the pause ends the
// run at once (testPlan's watchdog fails a run that waits out the hour):
// one run in the document, marked interrupted, status 255.
func TestRunRepeatInterruptInPause(t *testing.T) {
	w := memnet.NewWire()
	startServer(t, w, "127.0.0.1", 40000, nil)
	o := testPlan(t, w, testConfig("127.0.0.1"), Plan{Repeat: 3, Pause: time.Hour}, complete, func(e Event, cancel context.CancelFunc) {
		if e.Kind == EventRunEnd {
			cancel()
		}
	})
	if o.status != 255 {
		t.Errorf("status %d, want 255", o.status)
	}
	if runs, _ := o.doc["Runs"].([]any); len(runs) != 1 {
		t.Errorf("%d runs", len(runs))
	}
	if agg := obj(t, o.doc, "Aggregate"); agg["Interrupted"] != 1.0 || agg["RunsCompleted"] != 1.0 {
		t.Errorf("aggregate %v", agg)
	}
}

// TestRunRepeatBidirectional: repeated bidirectional tests aggregate per
// direction.
func TestRunRepeatBidirectional(t *testing.T) {
	w := memnet.NewWire()
	startServer(t, w, "127.0.0.1", 40000, nil)
	o := testPlan(t, w, bidirConfig("127.0.0.1"), Plan{Bidirectional: true, Repeat: 2}, loadedAfter(2, 5, 50, 200), nil)
	if o.status != 0 {
		t.Fatalf("status %d\n%s", o.status, o.out)
	}
	runs, _ := o.doc["Runs"].([]any)
	if len(runs) != 2 {
		t.Fatalf("%d runs", len(runs))
	}
	obj(t, runs[1].(map[string]any), "udpstp", "Bidirectional", "Upstream")
	agg := obj(t, o.doc, "Aggregate")
	for dir, want := range map[string]float64{"Upstream": 50, "Downstream": 200} {
		if got := num(t, obj(t, agg, dir, "MaxIPLayerCapacity"), "Median"); got < want || got > 1.05*want {
			t.Errorf("%s median maximum %.2f, want about %.0f", dir, got, want)
		}
		if got := num(t, obj(t, agg, dir, "RTTAvg"), "Median"); got != 0.030 {
			t.Errorf("%s median loaded RTT variation %v", dir, got)
		}
	}
}
