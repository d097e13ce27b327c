package report

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/dataphase"
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

// lanCollector is a finished half of a LAN's --bidirectional test: every
// ms figure 0 (OB-UDPST's whole ms), the downstream half's own figures to
// the µs a 60 µs minimum round trip and 140 µs above it under load.
func lanCollector(t *testing.T, w io.Writer, upstream bool) *Collector {
	t.Helper()
	info := TestInfo{TestIntTime: 5, SubIntPeriod: 1000, ConnMax: 1, ConnMin: 1, Bimodal: 2, SuppCount: 2, Upstream: upstream}
	c := New(w, Options{Format: FormatJSONFormatted, Connections: 1, MinConnections: 1, Now: fixedClock(1796009000e9)})
	c.Activate(info)
	for k := 1; k <= 5; k++ {
		r := fakeResult(k, 0, false)
		r.ClockDeltaMin, r.RTTMinimum, r.Stats.RTTVarMax, r.RTTSum = 0, 0, 0, 0
		if !upstream {
			v := uint32(20)
			if k > 2 {
				v = 140
			}
			r.Fine = dataphase.FineDelays{RTTVar: dataphase.FineStat{Min: v, Max: v, Sum: 10 * uint64(v), Cnt: 10},
				OWDVar: dataphase.FineStat{Min: 1, Max: 1, Sum: 10, Cnt: 10}}
			r.FineMin = dataphase.FineMinima{OWDUs: 37, OWDSet: true, RTTUs: 60, RTTSet: true, RTTBaseUs: 60, RTTBaseSet: true}
		}
		c.Add(0, r)
	}
	c.ConnEnded(true)
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBidirectionalLANResponsiveness: on a LAN, whose round trips
// OB-UDPST's whole ms read 0, the pair's loaded round trip and RPM come
// from udpstp's figures to the µs and say so, in the document and the
// text; the text's minimum line keeps OB-UDPST's bytes and ours follows.
func TestBidirectionalLANResponsiveness(t *testing.T) {
	var text bytes.Buffer
	b := &Bidirectional{Up: lanCollector(t, io.Discard, true), Down: lanCollector(t, io.Discard, false)}
	v, err := parseOrdered(b.Document(FormatJSONFormatted))
	if err != nil {
		t.Fatal(err)
	}
	ul := fObj(t, fObj(t, v.(*jobj), ExtensionKey), "Bidirectional")
	// 60 µs + 140 µs: 0.2 ms, 300000 RPM; not the 1 ms floor, 60000.
	if got := fNum(t, ul, "LoadedRTT"); math.Abs(got-0.0002) > 1e-9 {
		t.Errorf("LoadedRTT %v s, want 0.0002", got)
	}
	if got := fStr(t, ul, "LoadedRTTResolution"); got != string(ResolutionMicrosecond) {
		t.Errorf("LoadedRTTResolution %q", got)
	}
	if got := fNum(t, ul, "RPM"); got != 300000 || fStr(t, ul, "Grade") != GradeHigh {
		t.Errorf("RPM %v %s, want 300000 High", got, fStr(t, ul, "Grade"))
	}
	if got := fNum(t, fObj(t, ul, "Downstream"), "MinRTTFine"); got != 0.00006 {
		t.Errorf("Downstream MinRTTFine %v", got)
	}
	if err := b.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if want := "Latency under load, responsiveness: Round trip(ms): 0.200 (from the microsecond figures), RPM: 300000 (High)\n"; !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}

	var down bytes.Buffer
	lanText := func(w io.Writer) {
		info := TestInfo{TestIntTime: 5, SubIntPeriod: 1000, ConnMax: 1, ConnMin: 1}
		c := New(w, Options{Format: FormatText, Connections: 1, MinConnections: 1, Now: fixedClock(1796009000e9)})
		c.Activate(info)
		r := fakeResult(1, 0, false)
		r.ClockDeltaMin, r.RTTMinimum = 0, 0
		r.FineMin = dataphase.FineMinima{OWDUs: 37, OWDSet: true, RTTUs: 60, RTTSet: true, RTTBaseUs: 0, RTTBaseSet: true}
		c.Add(0, r)
		c.ConnEnded(true)
		if err := c.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	lanText(&down)
	for _, want := range []string{
		"Downstream Minimum One-Way Delay(ms): 0 [w/clock diff], Round-Trip Time(ms): 0, Active Connections: 1\n" +
			"Downstream Minimum to the microsecond: One-Way Delay(ms): 0.037 [w/clock diff], Round-Trip Time(ms): 0.060\n",
	} {
		if !strings.Contains(down.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, down.String())
		}
	}
}
