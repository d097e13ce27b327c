package plot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
)

// svgFontFallback names the font the text was measured in, then fonts
// with its metrics: few machines have Liberation Sans, and without one of
// these a browser falls back to its default, usually a serif, and the
// layout slips. The font is not embedded (hundreds of kilobytes).
const svgFontFallback = "font-family:Liberation Sans,Arial,Helvetica,sans-serif;"

// svgCanvas writes SVG, one element per stroke, text or set of dots, in
// pt (the viewBox's units). Horizontal alignment is left to the viewer
// (text-anchor), so that a substituted font stays aligned.
type svgCanvas struct {
	tf   *typeface
	b    bytes.Buffer
	w, h float64
}

func newSVGCanvas(tf *typeface, w, h float64) *svgCanvas {
	c := &svgCanvas{tf: tf, w: w, h: h}
	fmt.Fprintf(&c.b, "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%spt\" height=\"%spt\" viewBox=\"0 0 %s %s\">\n",
		num(w), num(h), num(w), num(h))
	return c
}

// num formats a coordinate to a hundredth of a point.
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// hex is c as #RRGGBB, the form the tests look for.
func hex(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
}

func (c *svgCanvas) stroke(pts []point, st lineStyle) {
	if len(pts) < 2 {
		return
	}
	c.b.WriteString(`<path d="`)
	for i, p := range pts {
		if i == 0 {
			c.b.WriteByte('M')
		} else {
			c.b.WriteByte('L')
		}
		c.b.WriteString(num(p.x) + "," + num(p.y))
	}
	c.b.WriteString(`" style="` + strokeStyle(st) + `"/>` + "\n")
}

func strokeStyle(st lineStyle) string {
	s := "fill:none;stroke:" + hex(st.color) + ";stroke-width:" + num(st.width) + ";stroke-linejoin:round"
	if len(st.dashes) > 0 {
		s += ";stroke-dasharray:"
		for i, d := range st.dashes {
			if i > 0 {
				s += ","
			}
			s += num(d)
		}
	}
	return s
}

// circle appends a closed circle's path: two arcs.
func circle(b *bytes.Buffer, at point, r float64) {
	fmt.Fprintf(b, "M%s,%sa%s,%s 0 1,0 %s,0a%s,%s 0 1,0 %s,0Z",
		num(at.x-r), num(at.y), num(r), num(r), num(2*r), num(r), num(r), num(-2*r))
}

func (c *svgCanvas) dots(pts []point, radius float64, col color.Color) {
	if len(pts) == 0 {
		return
	}
	c.b.WriteString(`<path d="`)
	for _, p := range pts {
		circle(&c.b, p, radius)
	}
	c.b.WriteString(`" style="fill:` + hex(col) + `"/>` + "\n")
}

func (c *svgCanvas) ring(at point, radius float64, st lineStyle) {
	c.b.WriteString(`<path d="`)
	circle(&c.b, at, radius)
	c.b.WriteString(`" style="` + strokeStyle(st) + `"/>` + "\n")
}

func (c *svgCanvas) fillRect(r rect, col color.Color) {
	fmt.Fprintf(&c.b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" style=\"fill:%s\"/>\n",
		num(r.l), num(r.t), num(r.r-r.l), num(r.b-r.t), hex(col))
}

func (c *svgCanvas) text(at point, s string, st textStyle) {
	if s == "" {
		return
	}
	_, across := c.tf.baseline(s, st)
	anchor := "start"
	switch st.xalign {
	case 0.5:
		anchor = "middle"
	case 1:
		anchor = "end"
	}
	x, y := at.x, at.y+across
	turn := ""
	if st.upright {
		x, y = at.x+across, at.y
		turn = fmt.Sprintf(` transform="rotate(-90 %s %s)"`, num(x), num(y))
	}
	fmt.Fprintf(&c.b, `<text x="%s" y="%s" text-anchor="%s"%s style="%sfont-size:%spx;fill:%s">`,
		num(x), num(y), anchor, turn, svgFontFallback, num(st.size), hex(st.color))
	// EscapeText fails only on its writer's error; a Buffer has none.
	_ = xml.EscapeText(&c.b, []byte(s))
	c.b.WriteString("</text>\n")
}

func (c *svgCanvas) writeTo(w io.Writer) error {
	c.b.WriteString("</svg>\n")
	_, err := w.Write(c.b.Bytes())
	return err
}
