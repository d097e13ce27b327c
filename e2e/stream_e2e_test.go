package e2e

// --json-stream end to end: a real 5 s test over two Test Connections,
// read line by line as the client writes it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/udpstp/udpstp/internal/testkit/golden"
	"github.com/udpstp/udpstp/report"
)

// streamLine is one event line of --json-stream.
type streamLine struct {
	Event string
	Data  json.RawMessage
	at    time.Time // when it was read
}

// TestJSONStream: every event type of a real run: start (the end
// document's Input), connected per Test Connection, one subinterval per
// Sub-Interval per connection and the summed ones (the document's
// IncrementalResult entries), and an end whose document is the --output
// file's, OB-UDPST's key for key; each line is written when it happens, not at the end.
func TestJSONStream(t *testing.T) {
	e2e(t)
	port := freePort(t, "127.0.0.1")
	spawnServer(t, udpstpBin, "server", "-p", fmt.Sprint(port), "127.0.0.1")
	outFile := filepath.Join(t.TempDir(), "result.json")
	c := start(t, exec.Command(udpstpBin, "client", "-d", "-t", "5", "-C", "2", "-p", fmt.Sprint(port), "--json-stream", "--output", outFile, "127.0.0.1"),
		procOpts{name: "udpstp client"})
	if code := c.exit(t, 60*time.Second); code != 0 {
		t.Fatalf("client: exit %d\n%s", code, c.errors())
	}
	if e := c.errors(); e != "" {
		t.Errorf("stderr: %s", e)
	}
	var lines []streamLine
	text, at := c.outputLines()
	for i, s := range text {
		var l streamLine
		if err := json.Unmarshal([]byte(s), &l); err != nil || l.Event == "" || len(l.Data) == 0 {
			t.Fatalf("line %d is not an event object (%v): %s", len(lines)+1, err, s)
		}
		l.at = at[i]
		lines = append(lines, l)
	}

	var doc struct {
		Input  json.RawMessage
		Output struct {
			IncrementalResult []json.RawMessage
		}
		ErrorStatus int
	}
	last := lines[len(lines)-1]
	if last.Event != "end" {
		t.Fatalf("the last event is %q", last.Event)
	}
	if err := json.Unmarshal(last.Data, &doc); err != nil || doc.ErrorStatus != 0 {
		t.Fatalf("end document: %v, ErrorStatus %d", err, doc.ErrorStatus)
	}
	file, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(file), last.Data) {
		t.Errorf("the end document is not the --output file:\n%s\n%s", last.Data, file)
	}
	// Without --extensions it is OB-UDPST's document (schema_e2e_test.go).
	if err := golden.ValidateDoc(golden.Schema(t), last.Data); err != nil {
		t.Errorf("the end document fails OB-UDPST's schema: %v", err)
	}

	count := map[string]int{}
	subs := map[int][]int{} // connection -> Sub-Interval numbers
	var firstSub time.Time
	var summed []json.RawMessage
	for i, l := range lines {
		count[l.Event]++
		switch l.Event {
		case "start":
			if i != 0 || !jsonEqual(t, l.Data, doc.Input) {
				t.Errorf("start (line %d) is not the first line holding the document's Input: %s", i+1, l.Data)
			}
		case "connected":
			var c struct{ Connection, ControlPort, TestPort, ControlProtocolVersion int }
			json.Unmarshal(l.Data, &c)
			if c.ControlPort != port || c.TestPort == 0 || c.ControlProtocolVersion != 20 || c.Connection < 1 || c.Connection > 2 {
				t.Errorf("connected: %s", l.Data)
			}
		case "subinterval":
			var s struct{ Connection, Interval int }
			json.Unmarshal(l.Data, &s)
			subs[s.Connection] = append(subs[s.Connection], s.Interval)
			if s.Connection == 0 {
				summed = append(summed, withoutConnection(t, l.Data))
			}
			if firstSub.IsZero() {
				firstSub = l.at
			}
		case "warning", "error":
			// A short loopback test may end with its search still
			// rising: that note (rising_e2e_test.go) is no fault.
			var w struct {
				ErrorStatus *int
				Message     string
			}
			json.Unmarshal(l.Data, &w)
			if l.Event != "warning" || w.Message != report.StillRisingNote || w.ErrorStatus != nil {
				t.Errorf("%s in a clean run: %s", l.Event, l.Data)
			}
		case "end":
			if i != len(lines)-1 {
				t.Errorf("end is line %d of %d", i+1, len(lines))
			}
		default:
			t.Errorf("unknown event %q", l.Event)
		}
	}
	if count["start"] != 1 || count["connected"] != 2 || count["end"] != 1 {
		t.Errorf("events %v", count)
	}
	for _, c := range []int{1, 2} {
		if want := []int{1, 2, 3, 4, 5}; !reflect.DeepEqual(subs[c], want) {
			t.Errorf("connection %d: Sub-Intervals %v, want %v", c, subs[c], want)
		}
	}
	if len(summed) != len(doc.Output.IncrementalResult) || len(summed) < 5 {
		t.Fatalf("%d summed subinterval events, %d IncrementalResult entries", len(summed), len(doc.Output.IncrementalResult))
	}
	for i := range summed {
		if !jsonEqual(t, summed[i], doc.Output.IncrementalResult[i]) {
			t.Errorf("summed subinterval %d:\n%s\nIncrementalResult:\n%s", i+1, summed[i], doc.Output.IncrementalResult[i])
		}
	}
	// Four more Sub-Intervals of a second each come after the first one:
	// a stream buffered to the end would arrive all at once.
	if gap := last.at.Sub(firstSub); gap < 2*time.Second {
		t.Errorf("the first subinterval arrived %v before the end: the stream is not written as it happens", gap)
	}
}

// withoutConnection is a subinterval event's data without its first key,
// "Connection", and our "udpstp" after the others: what is left is an
// IncrementalResult entry.
func withoutConnection(t *testing.T, data json.RawMessage) json.RawMessage {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "Connection")
	// Our delay variations to the µs follow the IncrementalResult keys
	// where this end measured them (docs/json-stream.md): a downstream
	// client does, in every Sub-Interval.
	if _, ok := m["udpstp"].(map[string]any)["RTTAvg"]; !ok {
		t.Errorf("subinterval event without the µs delays: %s", data)
	}
	delete(m, "udpstp")
	b, _ := json.Marshal(m)
	return b
}

// jsonEqual compares two JSON texts as values.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
