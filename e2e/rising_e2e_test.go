package e2e

// The note that the search was still rising at the end of a test
// (report.StillRising), end to end: on unshaped loopback a short test is
// judged by the rule's own inputs as its result records them, and the note
// must be there exactly when they say rising (text, JSON extension,
// --json-stream alike); on a tbf-limited lab path the search meets the
// bottleneck and there must be no note.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/netlab"
	"github.com/udpstp/udpstp/report"
)

// risingDoc is what the rule reads from a result document: the aggregate
// Sub-Intervals, and the sending rates where this end sends the load
// (the extension's Connections, one connection here).
type risingDoc struct {
	ErrorStatus int
	Output      struct {
		IncrementalResult []struct {
			IPLayerCapacity float64
			LossCount       uint32
			ReorderedCount  uint32
		}
		AtMax struct {
			MaxIPLayerCapacity float64
		}
	}
	Udpstp struct {
		SearchStillRising int
		Connections       []struct {
			SendingRateMbps []float64
		}
	} `json:"udpstp"`
}

// rule is report.StillRising applied to what the document records.
func (d *risingDoc) rule() bool {
	s := make([]report.ClimbSample, len(d.Output.IncrementalResult))
	for i, r := range d.Output.IncrementalResult {
		s[i] = report.ClimbSample{Capacity: r.IPLayerCapacity, SeqErrors: r.LossCount + r.ReorderedCount}
		if len(d.Udpstp.Connections) == 1 && i < len(d.Udpstp.Connections[0].SendingRateMbps) {
			s[i].SendRate = d.Udpstp.Connections[0].SendingRateMbps[i]
		}
	}
	return report.StillRising(s)
}

func (d *risingDoc) describe() string {
	var b strings.Builder
	for i, r := range d.Output.IncrementalResult {
		fmt.Fprintf(&b, " [%d] %.1f Mbit/s loss %d ooo %d", i+1, r.IPLayerCapacity, r.LossCount, r.ReorderedCount)
		if len(d.Udpstp.Connections) == 1 && i < len(d.Udpstp.Connections[0].SendingRateMbps) {
			fmt.Fprintf(&b, " rate %.1f", d.Udpstp.Connections[0].SendingRateMbps[i])
		}
	}
	return b.String()
}

func readRisingDoc(t *testing.T, b []byte) risingDoc {
	t.Helper()
	var d risingDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("result is not JSON: %v\n%.500s", err, b)
	}
	if d.ErrorStatus != 0 || len(d.Output.IncrementalResult) == 0 {
		t.Fatalf("test did not complete: ErrorStatus %d, %d Sub-Intervals\n%.500s", d.ErrorStatus, len(d.Output.IncrementalResult), b)
	}
	return d
}

// TestStillRisingLoopback: a 5 s test on unshaped loopback, downstream in
// text (the note after the Maximum, the flag in the --output file) and
// upstream with --json-stream (a warning event, the flag in the end
// document), where the rule also reads the sending rates.
func TestStillRisingLoopback(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	dir := t.TempDir()

	t.Run("down-text", func(t *testing.T) {
		file := filepath.Join(dir, "down.json")
		out, code, err := runClientProc(udpstpBin, "client", "-d", "-t", "5", "-p", fmt.Sprint(port), "--extensions", "--output", file, "127.0.0.1")
		if err != nil || code != 0 {
			t.Fatalf("client: exit %d, %v\n%s", code, err, out)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		d := readRisingDoc(t, b)
		rising := d.rule()
		t.Logf("rule: still rising %v:%s", rising, d.describe())
		if got := strings.Contains(string(out), report.StillRisingNote+"\n"); got != rising {
			t.Errorf("text note present %v, the rule says rising %v\n%s", got, rising, out)
		}
		if got := d.Udpstp.SearchStillRising == 1; got != rising {
			t.Errorf("JSON SearchStillRising %v, the rule says rising %v", got, rising)
		}
		if rising && !strings.Contains(string(out), "Maximum") {
			t.Errorf("no Maximum line before the note:\n%s", out)
		}
	})

	t.Run("up-stream", func(t *testing.T) {
		out, code, err := runClientProc(udpstpBin, "client", "-u", "-t", "5", "-p", fmt.Sprint(port), "--json-stream", "--extensions", "127.0.0.1")
		if err != nil || code != 0 {
			t.Fatalf("client: exit %d, %v\n%s", code, err, out)
		}
		var warned int
		var end []byte
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var l struct {
				Event string
				Data  json.RawMessage
			}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("not a JSON line: %v: %.200s", err, sc.Bytes())
			}
			switch l.Event {
			case report.StreamWarning:
				var w struct {
					Connection  int
					ErrorStatus *int
					Message     string
				}
				if err := json.Unmarshal(l.Data, &w); err != nil {
					t.Fatal(err)
				}
				if w.Message == report.StillRisingNote {
					warned++
					if w.Connection != 0 || w.ErrorStatus != nil {
						t.Errorf("the note's event: Connection %d, ErrorStatus %v; want 0 and none", w.Connection, w.ErrorStatus)
					}
				}
			case report.StreamEnd:
				end = l.Data
			}
		}
		if end == nil {
			t.Fatalf("no end event:\n%s", out)
		}
		d := readRisingDoc(t, end)
		rising := d.rule()
		t.Logf("rule: still rising %v:%s", rising, d.describe())
		if len(d.Udpstp.Connections) != 1 || len(d.Udpstp.Connections[0].SendingRateMbps) == 0 {
			t.Errorf("upstream result without its sending rates: %+v", d.Udpstp.Connections)
		}
		if want := map[bool]int{true: 1}[rising]; warned != want {
			t.Errorf("%d warning events with the note, the rule says rising %v", warned, rising)
		}
		if got := d.Udpstp.SearchStillRising == 1; got != rising {
			t.Errorf("end document's SearchStillRising %v, the rule says rising %v", got, rising)
		}
	})
}

// TestStillRisingTBF: behind a 20 Mbit/s tbf the search meets the
// bottleneck in the first seconds of a 10 s test and holds there: no note,
// in the text or the --output file.
func TestStillRisingTBF(t *testing.T) {
	cfg := netlab.Config{Down: netlab.Shape{RateBps: 20e6}}
	if err := netlab.AvailableFor(cfg); err != nil {
		t.Skip(err)
	}
	e2e(t)
	l := netlab.New(t, cfg)
	ours := labImpl{name: "udpstp", bin: udpstpBin, ours: true}
	labServer(t, l, ours)
	file := filepath.Join(t.TempDir(), "down.json")
	stdout, stderr, code := labRun(t, l, ours, 10, "-d", "--extensions", "--output", file)
	if code != 0 {
		t.Fatalf("client: exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	d := readRisingDoc(t, b)
	t.Logf("maximum %.2f Mbit/s; rule: still rising %v:%s", d.Output.AtMax.MaxIPLayerCapacity, d.rule(), d.describe())
	if strings.Contains(stdout, report.StillRisingNote) || d.Udpstp.SearchStillRising != 0 {
		t.Errorf("a search held at a 20 Mbit/s tbf reported as still rising:\n%s", stdout)
	}
	if d.rule() {
		t.Errorf("the rule says rising behind a 20 Mbit/s tbf")
	}
}
