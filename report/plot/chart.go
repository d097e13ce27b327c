package plot

import (
	"fmt"
	"image/color"
	"math"
)

// The charts are drawn here rather than with a plotting library: the one
// used before (gonum.org/v1/plot) parsed a dozen fonts and registered PDF,
// EPS and TeX back ends at import, in every process of the one binary,
// the agent's included (docs/agent.md, "Memory"). What is drawn is small:
// panels of lines over a time or run axis, stacked, with ticks, a grid, a
// legend and a few labelled marks.

// panel is one chart of a figure, in data coordinates: the y range grows
// with what is added (from 0) until the caller sets it.
type panel struct {
	title          string
	xlabel, ylabel string
	xmin, xmax     float64
	ymin, ymax     float64
	xticks, yticks ticker
	marks          []mark
	legend         []legendEntry
}

// ticker places an axis's ticks between lo and hi.
type ticker interface{ ticks(lo, hi float64) []tick }

// tick is a major tick when it has a label, else a minor one.
type tick struct {
	value float64
	label string
}

type lineStyle struct {
	color  color.Color
	width  float64   // pt
	dashes []float64 // pt, on and off; nil for a solid line
}

// mark is something drawn in a panel's data area.
type mark interface{ draw(c canvas, t transform) }

// legendEntry is a row of the legend: a line (when style.color is set)
// with a dot of radius dot (when above 0), and the name.
type legendEntry struct {
	name  string
	style lineStyle
	dot   float64
}

func newPanel(title, ylabel string) *panel {
	return &panel{title: title, ylabel: ylabel, ymax: math.Inf(-1), yticks: niceTicks{5}, xticks: niceTicks{8}}
}

// grow widens the y range to take y.
func (p *panel) grow(y float64) {
	p.ymin, p.ymax = min(p.ymin, y), max(p.ymax, y)
}

// line is a polyline, with a dot of radius dot at each point when dot > 0.
type line struct {
	xs, ys []float64
	style  lineStyle
	dot    float64
}

// addLine adds a line through (xs[i], ys[i]) and names it in the legend
// when name is not "". A value that is not finite is refused: it has no
// place on an axis.
func (p *panel) addLine(xs, ys []float64, st lineStyle, dot float64, name string) error {
	if len(xs) != len(ys) {
		return fmt.Errorf("plot: %d times for %d values", len(xs), len(ys))
	}
	for i := range ys {
		if !isFinite(xs[i]) || !isFinite(ys[i]) {
			return fmt.Errorf("plot: a point (%g, %g) that is not a number", xs[i], ys[i])
		}
	}
	for _, y := range ys {
		p.grow(y)
	}
	p.marks = append(p.marks, &line{xs: xs, ys: ys, style: st, dot: dot})
	if name != "" {
		p.legend = append(p.legend, legendEntry{name: name, style: st, dot: dot})
	}
	return nil
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func (l *line) draw(c canvas, t transform) {
	pts := make([]point, len(l.xs))
	for i := range l.xs {
		pts[i] = t.at(l.xs[i], l.ys[i])
	}
	c.stroke(pts, l.style)
	if l.dot > 0 {
		c.dots(pts, l.dot, l.style.color)
	}
}

// ringMark is a ring around a point.
type ringMark struct {
	x, y   float64
	radius float64
	style  lineStyle
}

func (r *ringMark) draw(c canvas, t transform) {
	c.ring(t.at(r.x, r.y), r.radius, r.style)
}

// labelMark is a text near a point: offset by dx, dy (pt, y up) and
// aligned to it by style.
type labelMark struct {
	x, y   float64
	dx, dy float64
	text   string
	style  textStyle
}

func (l *labelMark) draw(c canvas, t transform) {
	at := t.at(l.x, l.y)
	c.text(point{at.x + l.dx, at.y - l.dy}, l.text, l.style)
}

// point is a position on the canvas in pt, y down.
type point struct{ x, y float64 }

// transform maps a panel's data coordinates to the canvas.
type transform struct {
	area       rect
	xmin, xmax float64
	ymin, ymax float64
}

// rect is an area of the canvas: left, top, right, bottom (pt).
type rect struct{ l, t, r, b float64 }

// farOff bounds a point's canvas coordinates: a value far outside the axes
// (a fuzzed file's) must not become an infinity in an SVG or a raster
// edge a mile long.
const farOff = 1e4

func (t transform) at(x, y float64) point {
	fx := (x - t.xmin) / span(t.xmin, t.xmax)
	fy := (y - t.ymin) / span(t.ymin, t.ymax)
	return point{
		x: clampCoord(t.area.l + fx*(t.area.r-t.area.l)),
		y: clampCoord(t.area.b - fy*(t.area.b-t.area.t)),
	}
}

// span is hi - lo where that is a usable scale, else 1.
func span(lo, hi float64) float64 {
	if s := hi - lo; s > 0 && isFinite(s) {
		return s
	}
	return 1
}

func clampCoord(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return max(-farOff, min(farOff, v))
}

// textStyle is a text's size (pt), colour and alignment: xalign 0 puts the
// point at the text's left, 0.5 at its middle, 1 at its right; yalign 0 at
// its top, 0.5 at its middle, 1 at its bottom. An upright text reads
// upwards, turned a quarter to the left.
type textStyle struct {
	size           float64
	color          color.Color
	xalign, yalign float64
	upright        bool
}

// canvas is where a figure is drawn, in pt with y down: svgCanvas and
// pngCanvas.
type canvas interface {
	stroke(pts []point, st lineStyle)
	dots(pts []point, radius float64, c color.Color)
	ring(at point, radius float64, st lineStyle)
	fillRect(r rect, c color.Color)
	text(at point, s string, st textStyle)
}
