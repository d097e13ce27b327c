package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	gonum "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Format is an output format.
type Format int

const (
	SVG Format = iota
	PNG
)

// FormatOf picks the format from a file name's extension.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		return SVG, nil
	case ".png":
		return PNG, nil
	}
	return 0, fmt.Errorf("%q: the file name must end in .svg or .png, which selects the format", path)
}

// Figure size: panels of panelHeight stacked, width across; PNG at dpi.
const (
	width       = 9 * vg.Inch
	panelHeight = 2.3 * vg.Inch
	titleHeight = 0.55 * vg.Inch
	dpi         = 96
)

// Panel titles, which tests and readers look for.
const (
	TitleCapacity = "IP-layer capacity (L3) per Sub-Interval"
	TitleDelay    = "Delay variation"
	TitleErrors   = "Sequence errors per Sub-Interval"
	TitleRate     = "Sending rate the search set"
	LabelTime     = "test time (s)"
)

// legendMax is the most connections named one by one in a legend; beyond
// it the connections share one entry.
const legendMax = 8

// Palette: the sum in black, connections in the Okabe-Ito colours (told
// apart with the common colour-vision deficiencies), the maximum in red,
// the other figures in darker tones of their own.
var (
	sumColor  = color.RGBA{A: 255}
	maxColor  = color.RGBA{R: 213, G: 41, B: 41, A: 255}
	connColor = []color.Color{
		color.RGBA{R: 0, G: 114, B: 178, A: 255},   // blue
		color.RGBA{R: 230, G: 159, B: 0, A: 255},   // orange
		color.RGBA{R: 0, G: 158, B: 115, A: 255},   // bluish green
		color.RGBA{R: 204, G: 121, B: 167, A: 255}, // reddish purple
		color.RGBA{R: 86, G: 180, B: 233, A: 255},  // sky blue
		color.RGBA{R: 213, G: 94, B: 0, A: 255},    // vermillion
		color.RGBA{R: 240, G: 228, B: 66, A: 255},  // yellow
		color.RGBA{R: 120, G: 120, B: 120, A: 255}, // grey
	}
)

// metricColor are the colours of the aggregate's delay and sequence error
// series, none of them a connection's.
var metricColor = []color.Color{
	color.RGBA{R: 153, G: 52, B: 4, A: 255},   // brown
	color.RGBA{R: 68, G: 68, B: 150, A: 255},  // slate
	color.RGBA{R: 120, G: 50, B: 120, A: 255}, // plum
}

// ConnColor is the colour of connection id (from 1).
func ConnColor(id int) color.Color { return connColor[(max(id, 1)-1)%len(connColor)] }

// Render draws r in format f to w.
func Render(w io.Writer, r *Result, f Format) error {
	panels, err := panels(r)
	if err != nil {
		return err
	}
	head, sub := Heading(r)
	return renderFigure(w, f, head, sub, panels)
}

// renderFigure draws the two title lines and the panels, stacked, in
// format f to w.
func renderFigure(w io.Writer, f Format, head, sub string, panels []*gonum.Plot) error {
	h := titleHeight + vg.Length(len(panels))*panelHeight
	var c vg.CanvasWriterTo
	switch f {
	case SVG:
		c = &sansSVG{vgsvg.New(width, h)}
	case PNG:
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))}
	default:
		return fmt.Errorf("unknown format %d", f)
	}
	dc := draw.New(c)
	title(dc, head, sub)
	body := dc
	body.Max.Y -= titleHeight
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: 2, PadBottom: 4, PadLeft: 4, PadRight: 12, PadY: 10}
	grid := make([][]*gonum.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*gonum.Plot{p}
	}
	cells := gonum.Align(grid, tiles, body)
	for i, p := range panels {
		p.Draw(cells[i][0])
	}
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	return nil
}

// sansSVG writes gonum's SVG with a font fallback. gonum names only the
// font it measured the text with, Liberation Sans, which few machines
// have, and without embedding it (hundreds of kilobytes) a browser falls
// back to its default, usually a serif. Arial and Helvetica have the
// same metrics as Liberation Sans, so the layout holds with them.
type sansSVG struct{ *vgsvg.Canvas }

const (
	svgFont         = "font-family:Liberation Sans;"
	svgFontFallback = "font-family:Liberation Sans,Arial,Helvetica,sans-serif;"
)

func (c *sansSVG) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	if _, err := c.Canvas.WriteTo(&b); err != nil {
		return 0, err
	}
	n, err := w.Write(bytes.ReplaceAll(b.Bytes(), []byte(svgFont), []byte(svgFontFallback)))
	return int64(n), err
}

// PixelSize is the size of r's PNG in pixels.
func PixelSize(r *Result) (w, h int) {
	n := 3
	if r.HasRates() {
		n = 4
	}
	return pixelSize(n)
}

// pixelSize is the size in pixels of a PNG of n panels.
func pixelSize(n int) (w, h int) {
	return int(width.Dots(dpi) + 0.5), int((titleHeight + vg.Length(n)*panelHeight).Dots(dpi) + 0.5)
}

// testLead begins a heading: "what test to host: n Sub-Intervals of p s".
func testLead(what string, r *Result) string {
	head := what + " test"
	if r.Host != "" {
		head += " to " + r.Host
	}
	head += fmt.Sprintf(": %d Sub-Intervals", len(r.Intervals))
	if r.PeriodSec > 0 {
		head += fmt.Sprintf(" of %g s", r.PeriodSec)
	}
	return head
}

// Heading is the figure's two title lines.
func Heading(r *Result) (string, string) {
	head := testLead(r.Direction(), r)
	if r.Conns > 1 {
		head += fmt.Sprintf(", %d connections", r.Conns)
	}
	switch len(r.Maxima) {
	case 0:
	case 1:
		head += fmt.Sprintf("; maximum %.2f Mbps", r.Maxima[0].Capacity)
	default:
		vals := make([]string, len(r.Maxima))
		for i, m := range r.Maxima {
			vals[i] = fmt.Sprintf("%.2f", m.Capacity)
		}
		head += "; maxima " + strings.Join(vals, " / ") + " Mbps (bimodal)"
	}
	var sub []string
	switch {
	case strings.Contains(r.Software, "+udpstp."):
		sub = append(sub, "udpstp "+r.Software[strings.Index(r.Software, "+udpstp.")+len("+udpstp."):])
	case r.Software != "":
		sub = append(sub, "OB-UDPST "+r.Software)
	}
	if r.BOMTime != "" {
		sub = append(sub, "started "+r.BOMTime)
	}
	if r.TestType != "" {
		sub = append(sub, "rate "+strings.ToLower(r.TestType))
	}
	if r.Status != 0 {
		s := fmt.Sprintf("ErrorStatus %d", r.Status)
		if r.Message != "" {
			s += ": " + r.Message
		}
		sub = append(sub, s)
	}
	if r.Conns > 1 && r.PerConn == nil {
		sub = append(sub, "per-connection figures not in this file (OB-UDPST writes only the sum)")
	}
	return head, strings.Join(sub, "; ")
}

func title(dc draw.Canvas, head, sub string) {
	st := textStyle(13)
	st.XAlign, st.YAlign = draw.XCenter, draw.YTop
	mid := (dc.Min.X + dc.Max.X) / 2
	dc.FillText(st, vg.Point{X: mid, Y: dc.Max.Y - 6}, head)
	st = textStyle(10)
	st.XAlign, st.YAlign = draw.XCenter, draw.YTop
	st.Color = color.Gray{Y: 70}
	dc.FillText(st, vg.Point{X: mid, Y: dc.Max.Y - 24}, sub)
}

func panels(r *Result) ([]*gonum.Plot, error) {
	builders := []func(*Result) (*gonum.Plot, error){capacityPanel, delayPanel, errorsPanel}
	if r.HasRates() {
		builders = append(builders, ratePanel)
	}
	var out []*gonum.Plot
	xmax := 0.0
	for _, iv := range r.Intervals {
		xmax = max(xmax, iv.Seconds)
	}
	for _, c := range r.PerConn {
		xmax = max(xmax, r.connX(len(c.Capacity)-1))
	}
	for _, b := range builders {
		p, err := b(r)
		if err != nil {
			return nil, err
		}
		p.X.Min, p.X.Max = 0, max(xmax, 1)
		p.X.Tick.Marker = niceTicks{8}
		out = append(out, p)
	}
	out[len(out)-1].X.Label.Text = LabelTime
	return out, nil
}

// connX is the time of a connection's Sub-Interval k (from 0): the
// aggregate's k-th, which it was merged into, else k+1 periods.
func (r *Result) connX(k int) float64 {
	if k < 0 {
		return 0
	}
	if k < len(r.Intervals) {
		return r.Intervals[k].Seconds
	}
	period := r.PeriodSec
	if period <= 0 {
		period = 1
	}
	return float64(k+1) * period
}

func newPanel(title, ylabel string) *gonum.Plot {
	p := gonum.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 11)
	p.Y.Label.Text = ylabel
	for _, a := range []*gonum.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Tick.Label.Font = font.From(sans, 9)
	}
	p.X.Label.Text = ""
	p.Y.Min = 0
	p.Y.Tick.Marker = niceTicks{5}
	p.Legend.TextStyle.Font = font.From(sans, 9)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = 6, -4
	p.Add(plotter.NewGrid())
	return p
}

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func textStyle(size vg.Length) draw.TextStyle {
	return draw.TextStyle{Color: color.Black, Font: font.From(sans, size), Handler: gonum.DefaultTextHandler}
}

// series adds a line with points to p, named in the legend when name is
// not "".
func series(p *gonum.Plot, xs, ys []float64, c color.Color, width vg.Length, dashes []vg.Length, name string) error {
	pts := make(plotter.XYs, len(ys))
	for i := range ys {
		pts[i] = plotter.XY{X: xs[i], Y: ys[i]}
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.LineStyle = draw.LineStyle{Color: c, Width: width, Dashes: dashes}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: 1.6, Shape: draw.CircleGlyph{}}
	p.Add(l, s)
	if name != "" {
		p.Legend.Add(name, l, s)
	}
	return nil
}

// aggregateX are the aggregate Sub-Intervals' times.
func (r *Result) aggregateX() []float64 {
	xs := make([]float64, len(r.Intervals))
	for i, iv := range r.Intervals {
		xs[i] = iv.Seconds
	}
	return xs
}

func (r *Result) connXs(n int) []float64 {
	xs := make([]float64, n)
	for k := range xs {
		xs[k] = r.connX(k)
	}
	return xs
}

func column(r *Result, f func(*Interval) float64) []float64 {
	ys := make([]float64, len(r.Intervals))
	for i := range r.Intervals {
		ys[i] = f(&r.Intervals[i])
	}
	return ys
}

// connNames names the connections in a legend: each by number up to
// legendMax, else the first one stands for all.
func connName(r *Result, i int) string {
	if len(r.PerConn) <= legendMax {
		return fmt.Sprintf("connection %d", r.PerConn[i].ID)
	}
	if i == 0 {
		return fmt.Sprintf("each of %d connections", len(r.PerConn))
	}
	return ""
}

func capacityPanel(r *Result) (*gonum.Plot, error) {
	p := newPanel(TitleCapacity, "Mbps")
	for i, c := range r.PerConn {
		if err := series(p, r.connXs(len(c.Capacity)), c.Capacity, ConnColor(c.ID), 1.2, nil, connName(r, i)); err != nil {
			return nil, err
		}
	}
	name := "capacity"
	if r.Conns > 1 {
		name = "all connections (sum)"
	}
	if err := series(p, r.aggregateX(), column(r, func(iv *Interval) float64 { return iv.Capacity }), sumColor, 1.8, nil, name); err != nil {
		return nil, err
	}
	if err := markMaxima(p, r); err != nil {
		return nil, err
	}
	p.Y.Max = max(p.Y.Max*1.15, 1) // room for the maximum's label
	return p, nil
}

// markMaxima rings each mode's maximum and writes its value beside it.
func markMaxima(p *gonum.Plot, r *Result) error {
	for _, m := range r.Maxima {
		if m.Index < 0 {
			continue
		}
		text := fmt.Sprintf("maximum %.2f Mbps", m.Capacity)
		if len(r.Maxima) > 1 {
			text = fmt.Sprintf("maximum, mode %d: %.2f Mbps", m.Mode, m.Capacity)
		}
		if err := ring(p, r.Intervals[m.Index].Seconds, m.Capacity, text, false); err != nil {
			return err
		}
	}
	return nil
}

// niceTicks marks an axis in steps of 1, 2 or 5 times a power of ten, at
// most n labelled, with minor ticks between them: gonum's default puts
// only two or three labels, some at fractional seconds or printed with
// needless decimals.
type niceTicks struct{ n int }

func (t niceTicks) Ticks(lo, hi float64) []gonum.Tick {
	span := hi - lo
	if !(span > 0) || math.IsInf(span, 0) || t.n < 1 {
		return []gonum.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 6, 64)}}
	}
	step := math.Pow(10, math.Floor(math.Log10(span/float64(t.n))))
	minor := 5
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(step*m) <= float64(t.n) {
			step *= m
			if m == 2 {
				minor = 4
			}
			break
		}
	}
	var ticks []gonum.Tick
	sub := step / float64(minor)
	for i := math.Ceil(lo / sub); i*sub <= hi+sub*1e-9 && len(ticks) < 10*t.n; i++ {
		v := i * sub
		if math.Abs(math.Remainder(v, step)) < sub*1e-6 {
			ticks = append(ticks, gonum.Tick{Value: v, Label: strconv.FormatFloat(math.Round(v/step)*step, 'g', 6, 64)})
		} else {
			ticks = append(ticks, gonum.Tick{Value: v})
		}
	}
	return ticks
}

func delayPanel(r *Result) (*gonum.Plot, error) {
	what, avg, mx := "RTT variation", func(iv *Interval) float64 { return iv.RTTAvg }, func(iv *Interval) float64 { return iv.RTTMax }
	if r.OneWay {
		what, avg, mx = "one-way delay variation", func(iv *Interval) float64 { return iv.PDVAvg }, func(iv *Interval) float64 { return iv.PDVMax }
	}
	t := TitleDelay + ": " + what + ", the rate search's signal"
	if r.FineDelays {
		t = TitleDelay + ": " + what + " to the µs (the rate search used whole ms)"
	}
	if r.LowerMs > 0 || r.UpperMs > 0 {
		t += fmt.Sprintf(" (thresholds %g-%g ms)", r.LowerMs, r.UpperMs)
	}
	p := newPanel(t, "ms")
	xs := r.aggregateX()
	if err := series(p, xs, column(r, mx), metricColor[0], 1.4, nil, what+", maximum"); err != nil {
		return nil, err
	}
	if err := series(p, xs, column(r, avg), metricColor[1], 1.4, []vg.Length{4, 2}, what+", average"); err != nil {
		return nil, err
	}
	p.Y.Max = max(p.Y.Max*1.3, 1)
	return p, nil
}

func errorsPanel(r *Result) (*gonum.Plot, error) {
	p := newPanel(TitleErrors, "datagrams")
	xs := r.aggregateX()
	for _, s := range []struct {
		name   string
		f      func(*Interval) float64
		c      color.Color
		dashes []vg.Length
	}{
		{"lost", func(iv *Interval) float64 { return iv.Loss }, metricColor[0], nil},
		{"out of order", func(iv *Interval) float64 { return iv.Reordered }, metricColor[1], []vg.Length{4, 2}},
		{"duplicated", func(iv *Interval) float64 { return iv.Dup }, metricColor[2], []vg.Length{1, 2}},
	} {
		if err := series(p, xs, column(r, s.f), s.c, 1.4, s.dashes, s.name); err != nil {
			return nil, err
		}
	}
	p.Y.Max = max(p.Y.Max*1.3, 1)
	return p, nil
}

func ratePanel(r *Result) (*gonum.Plot, error) {
	p := newPanel(TitleRate+" (nominal L3 rate of its row, see udpstp rates)", "Mbps")
	for i, c := range r.PerConn {
		if c.RateMbps == nil {
			continue
		}
		name := connName(r, i)
		if len(r.PerConn) == 1 {
			name = "sending rate"
		}
		if last := len(c.RateRow) - 1; last >= 0 && name != "" && len(r.PerConn) <= legendMax {
			name += fmt.Sprintf(" (last row %d)", c.RateRow[last])
		}
		if err := series(p, r.connXs(len(c.RateMbps)), c.RateMbps, ConnColor(c.ID), 1.2, nil, name); err != nil {
			return nil, err
		}
	}
	p.Y.Max = max(p.Y.Max*1.15, 1)
	return p, nil
}
