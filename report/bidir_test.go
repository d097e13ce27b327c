package report

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// fakeCollector is a finished Collector, printing jsonf to w, of the
// golden-shaped fake run of info (see TestGoldenJSONShape): n
// Sub-Intervals of every connection.
func fakeCollector(t *testing.T, w io.Writer, info TestInfo, n int) *Collector {
	t.Helper()
	c := New(w, Options{Format: FormatJSONFormatted, Connections: info.ConnMax,
		MinConnections: info.ConnMin, Now: fixedClock(1796009000e9)})
	c.Activate(info)
	for k := 1; k <= n; k++ {
		for conn := range info.ConnMax {
			c.Add(conn, fakeResult(k, conn, info.CEThresh > 0))
		}
	}
	for range info.ConnMax {
		c.ConnEnded(true)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBidirectionalHalvesGoldenShape: for every OB-UDPST client.json
// with results, a bidirectional pair of fake runs of its shape (one
// upstream, one downstream half) makes one document whose top-level keys
// are Upstream, Downstream and udpstp, and each half alone passes
// TestGoldenJSONShape's check against the golden document, key for key
// (no "udpstp" key in a half without Options.Extensions): what OB-UDPST's
// parser reads. So do the runs of a Repeat's document.
func TestBidirectionalHalvesGoldenShape(t *testing.T) {
	forEachActivated(t, func(t *testing.T, doc *jobj, info TestInfo, n int) {
		up, down := info, info
		up.Upstream, down.Upstream = true, false
		b := &Bidirectional{Up: fakeCollector(t, io.Discard, up, n), Down: fakeCollector(t, io.Discard, down, n)}
		v, err := parseOrdered(b.Document(FormatJSONFormatted))
		if err != nil {
			t.Fatalf("the pair's document does not parse: %v", err)
		}
		pair := v.(*jobj)
		if got := strings.Join(pair.keys, ","); got != "Upstream,Downstream,"+ExtensionKey {
			t.Fatalf("top-level keys %s", got)
		}
		for _, half := range []string{"Upstream", "Downstream"} {
			walk(t, t.Name()+"."+half, fObj(t, pair, half), doc, checkKind(t))
		}
		if fStr(t, fObj(t, fObj(t, pair, "Upstream"), "Input"), "Role") != "Sender" ||
			fStr(t, fObj(t, fObj(t, pair, "Downstream"), "Input"), "Role") != "Receiver" {
			t.Error("the halves' roles are not Sender and Receiver")
		}

		rep := NewRepeat(2, 0)
		rep.Add(fakeCollector(t, io.Discard, info, n))
		rep.Add(b)
		v, err = parseOrdered(rep.Document(FormatJSONFormatted))
		if err != nil {
			t.Fatalf("the repeat's document does not parse: %v", err)
		}
		runs := field(t, v.(*jobj), "Runs").(jarr)
		if len(runs) != 2 {
			t.Fatalf("%d runs", len(runs))
		}
		walk(t, t.Name()+".Runs[0]", runs[0].(*jobj), doc, checkKind(t))
		walk(t, t.Name()+".Runs[1].Downstream", fObj(t, runs[1].(*jobj), "Downstream"), doc, checkKind(t))
	})
}

// TestBidirectionalStatus: the pair's status is the worse half's.
func TestBidirectionalStatus(t *testing.T) {
	info := TestInfo{TestIntTime: 5, SubIntPeriod: 1000, ConnMax: 1, ConnMin: 1, Bimodal: 2, SuppCount: 2}
	ok := fakeCollector(t, io.Discard, info, 5)
	for _, code := range []int{0, 3, 110, 200} {
		bad := failedCollector(t, code)
		if code == 0 {
			bad = fakeCollector(t, io.Discard, info, 5)
		}
		for _, b := range []*Bidirectional{{Up: ok, Down: bad}, {Up: bad, Down: ok}} {
			want := code
			if code == 3 { // a warning without results ends as 200 (too few connections)
				want = StatusMinConns
			}
			if got := b.ErrorStatus(); got != want {
				t.Errorf("halves %d and %d: status %d, want %d", b.Up.ErrorStatus(), b.Down.ErrorStatus(), got, want)
			}
		}
	}
}

// failedCollector is a finished Collector whose only Test Connection's
// setup failed with code (a warning then fails the minimum: 200).
func failedCollector(t *testing.T, code int) *Collector {
	t.Helper()
	c := New(&bytes.Buffer{}, Options{Format: FormatJSON, Now: fixedClock(1796009000e9)})
	if code < 50 {
		c.Warning(code, "WARNING: Timeout awaiting response from server 198.18.0.1:24601")
	} else {
		c.Error(code, "ERROR: Capacity exceeded 198.18.0.1:24601")
	}
	c.ConnEnded(false)
	c.CheckMinConnections()
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	return c
}
