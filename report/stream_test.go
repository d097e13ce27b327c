package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestStreamEncoder: every event is one line, one JSON object of "event"
// and "data"; start holds the Input object, subinterval the Connection
// and then exactly an IncrementalResult entry's keys, end the document.
func TestStreamEncoder(t *testing.T) {
	var out bytes.Buffer
	e := NewStreamEncoder(&out)
	info := testInfo(3)
	e.Start(&info)
	e.Connected(StreamConn{Connection: 1, Host: "h", HostIPAddress: "198.18.0.1", ControlPort: 24601, TestPort: 32000, ProtocolVersion: 20})
	var doc bytes.Buffer
	var aggs []Interval
	c := New(&doc, Options{Format: FormatJSON, Connections: 1, MinConnections: 1, Now: fixedClock(1796009000e9),
		OnInterval: func(iv Interval) { aggs = append(aggs, iv) }})
	c.Activate(info)
	c.Add(0, fakeResult(1, 0, false))
	c.ConnEnded(true)
	c.Finish()
	for i := range aggs {
		e.SubInterval(&aggs[i])
	}
	e.Message(StreamWarning, 0, 3, `REMOTE WARNING: "x"`)
	e.Message(StreamWarning, -1, -1, "ALERT: y")
	e.Message(StreamError, -1, 255, "ERROR: Test interrupted")
	e.End(c.Document(FormatJSON))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	names := []string{"start", "connected", "subinterval", "subinterval", "warning", "warning", "error", "end"}
	if len(lines) != len(names) {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		var ev struct {
			Event string
			Data  map[string]any
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Event != names[i] || ev.Data == nil {
			t.Errorf("line %d: %v %q", i, err, l)
		}
	}
	if !strings.HasPrefix(lines[0], `{"event":"start","data":{"Interface":"","Role":"Receiver",`) {
		t.Errorf("start: %s", lines[0])
	}
	// The connection's, then the aggregate's (Connection 0), each the
	// document's IncrementalResult entry after the Connection key.
	entry := string(render(aggs[1].res.object(), false))
	if lines[3] != `{"event":"subinterval","data":{"Connection":0,`+entry[1:]+"}" ||
		!strings.HasPrefix(lines[2], `{"event":"subinterval","data":{"Connection":1,"Interval":1,`) ||
		!strings.Contains(doc.String(), `"IncrementalResult":[`+entry+`]`) {
		t.Errorf("subinterval lines:\n%s\n%s\nentry %s", lines[2], lines[3], entry)
	}
	if lines[4] != `{"event":"warning","data":{"Connection":1,"ErrorStatus":3,"Message":"REMOTE WARNING: \"x\""}}` ||
		lines[5] != `{"event":"warning","data":{"Connection":0,"Message":"ALERT: y"}}` {
		t.Errorf("warnings:\n%s\n%s", lines[4], lines[5])
	}
	if lines[7] != `{"event":"end","data":`+strings.TrimSuffix(doc.String(), "\n")+"}" {
		t.Errorf("end: %s", lines[7])
	}
}

// TestStreamEventsDocumented: docs/json-stream.md's table of events has a
// row for every event name, inside the table (a row after a blank line is
// a paragraph of its own, not a row).
func TestStreamEventsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/json-stream.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "| event | when | data |\n")
	if !ok {
		t.Fatal("docs/json-stream.md has no table of events")
	}
	table, _, _ := strings.Cut(rest, "\n\n")
	for _, name := range []string{StreamStart, StreamConnected, StreamSubInterval, StreamWarning, StreamError, StreamEnd, StreamRunEnd} {
		if !strings.Contains(table, "\n| `"+name+"` |") {
			t.Errorf("event %q has no row in docs/json-stream.md's table", name)
		}
	}
}
