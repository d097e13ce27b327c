package plot

import (
	"fmt"
	"image/color"
	"io"
)

// Figure size (pt): the title lines, then panels of panelHeight stacked,
// width across; a PNG at dpi.
const (
	width       = 648 // 9 inches
	panelHeight = 165.6
	titleHeight = 39.6
	dpi         = 96
)

// A panel's furniture (pt and colours).
const (
	tickLength   = 5
	legendThumb  = 20 // a legend row's line
	legendIndent = 6
)

var (
	gridStyle = lineStyle{color: color.Gray{Y: 220}, width: 0.5}
	axisStyle = lineStyle{color: color.Black, width: 0.5}
)

// figureCanvas is a canvas that writes itself out once drawn.
type figureCanvas interface {
	canvas
	writeTo(w io.Writer) error
}

// renderFigure draws the two title lines and the panels, stacked, in
// format f to w.
func renderFigure(w io.Writer, f Format, head, sub string, panels []*panel) error {
	tf, err := newTypeface()
	if err != nil {
		return err
	}
	h := figureHeight(len(panels))
	var c figureCanvas
	switch f {
	case SVG:
		c = newSVGCanvas(tf, width, h)
	case PNG:
		c = newPNGCanvas(tf, width, h, dpi)
	default:
		return fmt.Errorf("unknown format %d", f)
	}
	c.fillRect(rect{0, 0, width, h}, color.White)
	mid := width / 2.0
	c.text(point{mid, 6}, head, textStyle{size: 13, color: color.Black, xalign: 0.5})
	c.text(point{mid, 24}, sub, textStyle{size: 10, color: color.Gray{Y: 70}, xalign: 0.5})
	l := layout{tf: tf}
	for _, a := range l.areas(panels, rect{l: 4, t: titleHeight + 2, r: width - 12, b: h - 4}) {
		l.draw(c, a)
	}
	if err := c.writeTo(w); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	return nil
}

func figureHeight(panels int) float64 { return titleHeight + float64(panels)*panelHeight }

// layout places panels and draws them.
type layout struct{ tf *typeface }

// placed is a panel, its cell and the data area within it.
type placed struct {
	p          *panel
	cell, data rect
	xticks     []tick
	yticks     []tick
}

// areas stacks the panels in body, 10 pt apart, and lines their data
// areas up on the left, past the widest y axis, so that the time axes
// of a figure sit one above the other.
func (l layout) areas(panels []*panel, body rect) []placed {
	const gap = 10
	n := float64(len(panels))
	cellH := (body.b - body.t - gap*(n-1)) / n
	out := make([]placed, len(panels))
	left := 0.0
	for i, p := range panels {
		top := body.t + float64(i)*(cellH+gap)
		pl := placed{p: p, cell: rect{body.l, top, body.r, top + cellH}}
		pl.xticks = inRange(p.xticks.ticks(p.xmin, p.xmax), p.xmin, p.xmax)
		pl.yticks = inRange(p.yticks.ticks(p.ymin, p.ymax), p.ymin, p.ymax)
		left = max(left, l.yAxisWidth(pl))
		out[i] = pl
	}
	for i := range out {
		pl := &out[i]
		pl.data = rect{
			l: pl.cell.l + left,
			t: pl.cell.t + l.tf.lineHeight(11) + 3,
			r: pl.cell.r,
			b: pl.cell.b - l.xAxisHeight(pl.p),
		}
	}
	return out
}

// inRange keeps the ticks between lo and hi.
func inRange(ticks []tick, lo, hi float64) []tick {
	eps := span(lo, hi) * 1e-9
	var out []tick
	for _, t := range ticks {
		if t.value >= lo-eps && t.value <= hi+eps {
			out = append(out, t)
		}
	}
	return out
}

// yAxisWidth is the width of a panel's y axis: its label, turned upright,
// the widest tick label, the ticks.
func (l layout) yAxisWidth(pl placed) float64 {
	w := 0.0
	for _, t := range pl.yticks {
		w = max(w, l.tf.width(t.label, 9))
	}
	return l.tf.lineHeight(10) + 4 + w + 3 + tickLength
}

// xAxisHeight is the height of a panel's x axis: the ticks, their labels
// and the axis's label where it has one.
func (l layout) xAxisHeight(p *panel) float64 {
	h := tickLength + 2 + l.tf.lineHeight(9)
	if p.xlabel != "" {
		h += 2 + l.tf.lineHeight(10)
	}
	return h
}

// draw draws a placed panel: the title, the grid, the marks, the axes
// and the legend over them.
func (l layout) draw(c canvas, pl placed) {
	p, d := pl.p, pl.data
	c.text(point{(d.l + d.r) / 2, pl.cell.t}, p.title, textStyle{size: 11, color: color.Black, xalign: 0.5})
	t := transform{area: d, xmin: p.xmin, xmax: p.xmax, ymin: p.ymin, ymax: p.ymax}
	for _, tk := range pl.xticks {
		if tk.label != "" {
			x := t.at(tk.value, 0).x
			c.stroke([]point{{x, d.t}, {x, d.b}}, gridStyle)
		}
	}
	for _, tk := range pl.yticks {
		if tk.label != "" {
			y := t.at(0, tk.value).y
			c.stroke([]point{{d.l, y}, {d.r, y}}, gridStyle)
		}
	}
	for _, m := range p.marks {
		m.draw(c, t)
	}
	l.axes(c, pl, t)
	l.legend(c, p, d)
}

// axes draws the left and bottom axes with their ticks and labels.
func (l layout) axes(c canvas, pl placed, t transform) {
	p, d := pl.p, pl.data
	c.stroke([]point{{d.l, d.t}, {d.l, d.b}, {d.r, d.b}}, axisStyle)
	tickStyle := textStyle{size: 9, color: color.Black}
	for _, tk := range pl.xticks {
		x, n := t.at(tk.value, 0).x, tickLength/2.0
		if tk.label != "" {
			n = tickLength
			st := tickStyle
			st.xalign = 0.5
			c.text(point{x, d.b + tickLength + 2}, tk.label, st)
		}
		c.stroke([]point{{x, d.b}, {x, d.b + n}}, axisStyle)
	}
	for _, tk := range pl.yticks {
		y, n := t.at(0, tk.value).y, tickLength/2.0
		if tk.label != "" {
			n = tickLength
			st := tickStyle
			st.xalign, st.yalign = 1, 0.5
			c.text(point{d.l - tickLength - 3, y}, tk.label, st)
		}
		c.stroke([]point{{d.l - n, y}, {d.l, y}}, axisStyle)
	}
	if p.xlabel != "" {
		y := d.b + tickLength + 2 + l.tf.lineHeight(9) + 2
		c.text(point{(d.l + d.r) / 2, y}, p.xlabel, textStyle{size: 10, color: color.Black, xalign: 0.5})
	}
	if p.ylabel != "" {
		c.text(point{pl.cell.l, (d.t + d.b) / 2}, p.ylabel, textStyle{size: 10, color: color.Black, xalign: 0.5, upright: true})
	}
}

// legend lists the named lines at the data area's top left.
func (l layout) legend(c canvas, p *panel, d rect) {
	x, y := d.l+legendIndent, d.t+4
	row := l.tf.lineHeight(9)
	for _, e := range p.legend {
		mid := y + row/2
		if e.style.color != nil {
			c.stroke([]point{{x, mid}, {x + legendThumb, mid}}, e.style)
			if e.dot > 0 {
				c.dots([]point{{x + legendThumb/2, mid}}, e.dot, e.style.color)
			}
		}
		c.text(point{x + legendThumb + 4, mid}, e.name, textStyle{size: 9, color: color.Black, yalign: 0.5})
		y += row
	}
}
