package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
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
	return pixels(width, dpi), pixels(figureHeight(n), dpi)
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

func panels(r *Result) ([]*panel, error) {
	builders := []func(*Result) (*panel, error){capacityPanel, delayPanel, errorsPanel}
	if r.HasRates() {
		builders = append(builders, ratePanel)
	}
	var out []*panel
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
		p.xmin, p.xmax = 0, max(xmax, 1)
		out = append(out, p)
	}
	out[len(out)-1].xlabel = LabelTime
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

// series adds a line with a dot at each point to p, named in the legend
// when name is not "".
func series(p *panel, xs, ys []float64, c color.Color, width float64, dashes []float64, name string) error {
	return p.addLine(xs, ys, lineStyle{color: c, width: width, dashes: dashes}, 1.6, name)
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

func capacityPanel(r *Result) (*panel, error) {
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
	p.ymax = max(p.ymax*1.15, 1) // room for the maximum's label
	return p, nil
}

// markMaxima rings each mode's maximum and writes its value beside it.
func markMaxima(p *panel, r *Result) error {
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
// most n labelled, with minor ticks between them, never at a fractional
// second or with needless decimals.
type niceTicks struct{ n int }

func (t niceTicks) ticks(lo, hi float64) []tick {
	extent := hi - lo
	if !(extent > 0) || math.IsInf(extent, 0) || t.n < 1 {
		return []tick{{value: lo, label: strconv.FormatFloat(lo, 'g', 6, 64)}}
	}
	step := math.Pow(10, math.Floor(math.Log10(extent/float64(t.n))))
	minor := 5
	for _, m := range []float64{1, 2, 5, 10} {
		if extent/(step*m) <= float64(t.n) {
			step *= m
			if m == 2 {
				minor = 4
			}
			break
		}
	}
	var ticks []tick
	sub := step / float64(minor)
	for i := math.Ceil(lo / sub); i*sub <= hi+sub*1e-9 && len(ticks) < 10*t.n; i++ {
		v := i * sub
		if math.Abs(math.Remainder(v, step)) < sub*1e-6 {
			ticks = append(ticks, tick{value: v, label: strconv.FormatFloat(math.Round(v/step)*step, 'g', 6, 64)})
		} else {
			ticks = append(ticks, tick{value: v})
		}
	}
	return ticks
}

func delayPanel(r *Result) (*panel, error) {
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
	if err := series(p, xs, column(r, avg), metricColor[1], 1.4, []float64{4, 2}, what+", average"); err != nil {
		return nil, err
	}
	p.ymax = max(p.ymax*1.3, 1)
	return p, nil
}

func errorsPanel(r *Result) (*panel, error) {
	p := newPanel(TitleErrors, "datagrams")
	xs := r.aggregateX()
	for _, s := range []struct {
		name   string
		f      func(*Interval) float64
		c      color.Color
		dashes []float64
	}{
		{"lost", func(iv *Interval) float64 { return iv.Loss }, metricColor[0], nil},
		{"out of order", func(iv *Interval) float64 { return iv.Reordered }, metricColor[1], []float64{4, 2}},
		{"duplicated", func(iv *Interval) float64 { return iv.Dup }, metricColor[2], []float64{1, 2}},
	} {
		if err := series(p, xs, column(r, s.f), s.c, 1.4, s.dashes, s.name); err != nil {
			return nil, err
		}
	}
	p.ymax = max(p.ymax*1.3, 1)
	return p, nil
}

func ratePanel(r *Result) (*panel, error) {
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
	p.ymax = max(p.ymax*1.15, 1)
	return p, nil
}
