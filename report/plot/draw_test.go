package plot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// svgDoc is what the structure test reads of an SVG: every text, and every
// path's style (the lines' stroke colours, the glyphs' fills).
type svgDoc struct {
	texts  []string
	styles []string
	width  string
}

func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	var doc svgDoc
	d := xml.NewDecoder(bytes.NewReader(b))
	depth := 0
	var inText bool
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			switch e.Name.Local {
			case "svg":
				if depth != 1 {
					t.Errorf("nested svg element")
				}
				for _, a := range e.Attr {
					if a.Name.Local == "width" {
						doc.width = a.Value
					}
				}
			case "text":
				inText = true
				text.Reset()
				for _, a := range e.Attr {
					if a.Name.Local == "style" && !strings.Contains(a.Value, svgFontFallback) {
						t.Errorf("text without the font fallback: %q", a.Value)
					}
				}
			case "path":
				for _, a := range e.Attr {
					if a.Name.Local == "style" {
						doc.styles = append(doc.styles, a.Value)
					}
				}
			}
		case xml.CharData:
			if inText {
				text.Write(e)
			}
		case xml.EndElement:
			depth--
			if e.Name.Local == "text" {
				inText = false
				doc.texts = append(doc.texts, text.String())
			}
		}
	}
	if doc.width == "" {
		t.Fatal("no svg root element with a width")
	}
	return doc
}

// count is how many texts are exactly s.
func (d svgDoc) count(s string) int {
	n := 0
	for _, t := range d.texts {
		if t == s {
			n++
		}
	}
	return n
}

func (d svgDoc) hasPrefix(s string) bool {
	for _, t := range d.texts {
		if strings.HasPrefix(t, s) {
			return true
		}
	}
	return false
}

// strokes counts the paths stroked in colour c.
func (d svgDoc) strokes(c color.Color) int {
	r, g, b, _ := c.RGBA()
	want := fmt.Sprintf("stroke:#%02X%02X%02X", r>>8, g>>8, b>>8)
	n := 0
	for _, s := range d.styles {
		if strings.Contains(s, want) {
			n++
		}
	}
	return n
}

// renderFile reads the result at path and renders it in format f.
func renderFile(t *testing.T, path string, f Format) (*Result, *bytes.Buffer) {
	t.Helper()
	r, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Render(&b, r, f); err != nil {
		t.Fatal(err)
	}
	return r, &b
}

func renderSVG(t *testing.T, path string) (*Result, svgDoc) {
	t.Helper()
	r, b := renderFile(t, path, SVG)
	return r, parseSVG(t, b.Bytes())
}

// The golden structure of a plot, read back from the SVG: the panels
// (titles, axis labels, the time axis once at the bottom), one series per
// connection in each per-connection panel in its own colour and no more,
// the sum, and the maximum ringed and labelled with its value. A layout
// change does not break it; a lost panel, series or marker does.
func TestSVGStructure(t *testing.T) {
	t.Run("udpstp upstream, 2 connections", func(t *testing.T) {
		r, doc := renderSVG(t, "testdata/udpstp_us_c2_t5.json")
		head, _ := Heading(r)
		for _, want := range []string{head, TitleCapacity, TitleErrors, "all connections (sum)", "maximum 1722.78 Mbps", "lost", "out of order", "duplicated"} {
			if doc.count(want) != 1 {
				t.Errorf("%d texts %q, want 1", doc.count(want), want)
			}
		}
		for _, prefix := range []string{TitleDelay + ": RTT variation", TitleRate} {
			if !doc.hasPrefix(prefix) {
				t.Errorf("no panel titled %q...", prefix)
			}
		}
		if n := doc.count(LabelTime); n != 1 {
			t.Errorf("%d time axis labels, want 1 (the bottom panel)", n)
		}
		if n := doc.count("Mbps"); n != 2 {
			t.Errorf("%d Mbps axes, want 2 (capacity, sending rate)", n)
		}
		if doc.count("ms") != 1 || doc.count("datagrams") != 1 {
			t.Errorf("delay or sequence error axis label missing: %q", doc.texts)
		}
		for _, c := range r.PerConn {
			// Named once in the capacity legend, once with its last row.
			if doc.count(fmt.Sprintf("connection %d", c.ID)) != 1 ||
				doc.count(fmt.Sprintf("connection %d (last row %d)", c.ID, c.RateRow[len(c.RateRow)-1])) != 1 {
				t.Errorf("connection %d not in both legends: %q", c.ID, doc.texts)
			}
			// Two panels, a line each, and a legend thumbnail each.
			if n := doc.strokes(ConnColor(c.ID)); n != 4 {
				t.Errorf("connection %d: %d paths in its colour, want 4 (2 series, 2 legend lines)", c.ID, n)
			}
		}
		if n := doc.strokes(ConnColor(3)); n != 0 {
			t.Errorf("%d paths in a third connection's colour", n)
		}
		if n := doc.strokes(maxColor); n != 1 {
			t.Errorf("%d maximum markers, want 1", n)
		}
	})
	t.Run("OB-UDPST downstream, 2 connections", func(t *testing.T) {
		_, doc := renderSVG(t, filepath.Join(golden.Require(t), "ds_multi_conn_c2", "client.json"))
		if doc.count("maximum 1774.64 Mbps") != 1 || doc.count("all connections (sum)") != 1 || doc.strokes(maxColor) != 1 {
			t.Errorf("sum or maximum missing: %q", doc.texts)
		}
		if doc.hasPrefix("connection ") || doc.hasPrefix(TitleRate) || doc.strokes(ConnColor(1)) != 0 {
			t.Errorf("per-connection series drawn from a file that has none: %q", doc.texts)
		}
		if !doc.hasPrefix("OB-UDPST 9.0.0; ") || !strings.Contains(strings.Join(doc.texts, "\n"), "per-connection figures not in this file") {
			t.Errorf("the heading does not say whose file it is and what it lacks: %q", doc.texts)
		}
		if doc.count(LabelTime) != 1 {
			t.Errorf("time axis label missing")
		}
	})
	t.Run("OB-UDPST bimodal", func(t *testing.T) {
		_, doc := renderSVG(t, filepath.Join(golden.Require(t), "ds_dualphase_i-3", "client.json"))
		if !doc.hasPrefix("maximum, mode 1: ") || !doc.hasPrefix("maximum, mode 2: ") || doc.strokes(maxColor) != 2 {
			t.Errorf("both modes' maxima not marked: %q", doc.texts)
		}
	})
	t.Run("OB-UDPST one-way delay", func(t *testing.T) {
		_, doc := renderSVG(t, filepath.Join(golden.Require(t), "us_owd", "client.json"))
		if !doc.hasPrefix(TitleDelay + ": one-way delay variation") {
			t.Errorf("-o result plots RTT: %q", doc.texts)
		}
	})
}

// PNG output decodes as a PNG of the size PixelSize gives.
func TestPNG(t *testing.T) {
	for _, path := range []string{"testdata/udpstp_us_c2_t5.json", "testdata/udpstp_ds_c2_t10.json"} {
		r, b := renderFile(t, path, PNG)
		img, err := png.Decode(b)
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", path, err)
		}
		w, h := PixelSize(r)
		if got := img.Bounds().Size(); got.X != w || got.Y != h || w < 800 || h < 600 {
			t.Errorf("%s: %v pixels, want %dx%d", path, got, w, h)
		}
		// Not blank: the sum's black line is there.
		black := 0
		for y := 0; y < h; y += 2 {
			for x := 0; x < w; x += 2 {
				if r, g, b, _ := img.At(x, y).RGBA(); r|g|b == 0 {
					black++
				}
			}
		}
		if black < 100 {
			t.Errorf("%s: %d black pixels sampled: a blank image?", path, black)
		}
		checkUpright(t, path, img, pixelSize)
	}
}

// checkUpright: the first panel's y label ("Mbps") is in the figure's
// left margin, where nothing else is drawn, turned upright: its dark
// pixels span more height than width.
func checkUpright(t *testing.T, path string, img image.Image, size func(int) (int, int)) {
	t.Helper()
	_, top := size(0)                                   // below the title lines
	_, bottom := size(1)                                // to the first panel's end
	x0, x1, y0, y1 := img.Bounds().Dx(), 0, bottom, top // the ink's bounds
	for y := top; y < bottom; y++ {
		for x := 0; x < 24; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r+g+b < 3*0x8000 {
				x0, x1, y0, y1 = min(x0, x), max(x1, x), min(y0, y), max(y1, y)
			}
		}
	}
	if x1 < x0 || y1-y0 < 2*(x1-x0) {
		t.Errorf("%s: the y label's ink spans x %d-%d, y %d-%d: missing or not upright", path, x0, x1, y0, y1)
	}
}

func TestFormatOf(t *testing.T) {
	for name, want := range map[string]Format{"a.svg": SVG, "b.SVG": SVG, "dir/c.png": PNG} {
		if f, err := FormatOf(name); err != nil || f != want {
			t.Errorf("FormatOf(%q) = %v, %v", name, f, err)
		}
	}
	for _, name := range []string{"a.pdf", "noext", "a.svg.bak"} {
		if _, err := FormatOf(name); err == nil || !strings.Contains(err.Error(), ".svg or .png") {
			t.Errorf("FormatOf(%q) error %v", name, err)
		}
	}
}

// Many connections share one legend entry instead of filling the panel;
// every one is still drawn.
func TestManyConnections(t *testing.T) {
	r := &Result{Conns: 24, Intervals: []Interval{{N: 1, Seconds: 1, Capacity: 240}, {N: 2, Seconds: 2, Capacity: 480}}}
	for id := 1; id <= 24; id++ {
		r.PerConn = append(r.PerConn, Conn{ID: id, Capacity: []float64{10, 20}, RateMbps: []float64{11, 21}, RateRow: []int{11, 21}})
	}
	var b bytes.Buffer
	if err := Render(&b, r, SVG); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, b.Bytes())
	if doc.count("each of 24 connections") != 2 || doc.hasPrefix("connection ") {
		t.Errorf("legend of 24 connections: %q", doc.texts)
	}
	// 24 connections over 8 colours: 3 lines per colour per panel, and
	// the one legend entry per panel in the first colour.
	if n := doc.strokes(ConnColor(2)); n != 6 {
		t.Errorf("%d paths in the second colour, want 6", n)
	}
}

// A dash pattern cuts a line into the runs it draws: on 4, off 2, along
// a 20 pt line and across a corner.
func TestDashed(t *testing.T) {
	runs := dashed([]point{{0, 0}, {20, 0}}, []float64{4, 2})
	want := [][2]float64{{0, 4}, {6, 10}, {12, 16}, {18, 20}}
	if len(runs) != len(want) {
		t.Fatalf("%d runs, want %d: %v", len(runs), len(want), runs)
	}
	for i, r := range runs {
		if a, b := r[0].x, r[len(r)-1].x; math.Abs(a-want[i][0]) > 1e-9 || math.Abs(b-want[i][1]) > 1e-9 {
			t.Errorf("run %d from %g to %g, want %v", i, a, b, want[i])
		}
	}
	// A dash across a corner keeps the corner: (4,0) (5,0) (5,3).
	runs = dashed([]point{{0, 0}, {5, 0}, {5, 5}}, []float64{3, 1, 4, 1})
	if len(runs) < 2 || len(runs[1]) != 3 || runs[1][1] != (point{5, 0}) {
		t.Errorf("the second dash does not turn the corner: %v", runs)
	}
	if runs := dashed([]point{{0, 0}, {1, 1}}, nil); len(runs) != 1 || len(runs[0]) != 2 {
		t.Errorf("a solid line cut: %v", runs)
	}
}
