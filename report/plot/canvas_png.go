package plot

import (
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// pngCanvas draws into an image, anti-aliased: a stroke is filled as the
// union of a quadrilateral per segment and a disc per vertex (round joins
// and ends), each wound the same way so that overlaps add up rather than
// cancel; text is drawn with the typeface's glyphs.
type pngCanvas struct {
	tf    *typeface
	img   *image.RGBA
	scale float64 // pixels a pt
	dpi   float64
	z     vector.Rasterizer
	polys [][]point // in pixels, for the next fill
}

func newPNGCanvas(tf *typeface, w, h, dpi float64) *pngCanvas {
	wp, hp := pixels(w, dpi), pixels(h, dpi)
	return &pngCanvas{tf: tf, img: image.NewRGBA(image.Rect(0, 0, wp, hp)), scale: dpi / 72, dpi: dpi}
}

// pixels is a length in pt at dpi, rounded to whole pixels.
func pixels(pt, dpi float64) int { return int(pt*dpi/72 + 0.5) }

func (c *pngCanvas) px(p point) point { return point{p.x * c.scale, p.y * c.scale} }

func (c *pngCanvas) stroke(pts []point, st lineStyle) {
	hw := max(st.width*c.scale, 1) / 2 // thinner than a pixel fades away
	for _, run := range dashed(pts, st.dashes) {
		for i, p := range run {
			p = c.px(p)
			c.polys = append(c.polys, disc(p, hw, 8))
			if i > 0 {
				c.polys = append(c.polys, segment(c.px(run[i-1]), p, hw))
			}
		}
	}
	c.fill(st.color)
}

func (c *pngCanvas) dots(pts []point, radius float64, col color.Color) {
	for _, p := range pts {
		c.polys = append(c.polys, disc(c.px(p), radius*c.scale, 12))
	}
	c.fill(col)
}

func (c *pngCanvas) ring(at point, radius float64, st lineStyle) {
	const n = 48
	pts := make([]point, n+1)
	for i := range pts {
		a := 2 * math.Pi * float64(i) / n
		pts[i] = point{at.x + radius*math.Cos(a), at.y + radius*math.Sin(a)}
	}
	c.stroke(pts, st)
}

func (c *pngCanvas) fillRect(r rect, col color.Color) {
	a, b := c.px(point{r.l, r.t}), c.px(point{r.r, r.b})
	draw.Draw(c.img, image.Rect(int(a.x), int(a.y), int(math.Ceil(b.x)), int(math.Ceil(b.y))), image.NewUniform(col), image.Point{}, draw.Src)
}

// fill draws the polygons gathered in col, rasterized over their bounds
// only.
func (c *pngCanvas) fill(col color.Color) {
	defer func() { c.polys = c.polys[:0] }()
	lo, hi := point{math.Inf(1), math.Inf(1)}, point{math.Inf(-1), math.Inf(-1)}
	for _, poly := range c.polys {
		for _, p := range poly {
			lo = point{min(lo.x, p.x), min(lo.y, p.y)}
			hi = point{max(hi.x, p.x), max(hi.y, p.y)}
		}
	}
	box := image.Rect(int(math.Floor(lo.x)), int(math.Floor(lo.y)), int(math.Ceil(hi.x)), int(math.Ceil(hi.y))).Intersect(c.img.Bounds())
	if box.Empty() {
		return
	}
	c.z.Reset(box.Dx(), box.Dy())
	ox, oy := float64(box.Min.X), float64(box.Min.Y)
	for _, poly := range c.polys {
		if area(poly) < 0 {
			reverse(poly)
		}
		c.z.MoveTo(float32(poly[0].x-ox), float32(poly[0].y-oy))
		for _, p := range poly[1:] {
			c.z.LineTo(float32(p.x-ox), float32(p.y-oy))
		}
		c.z.ClosePath()
	}
	c.z.Draw(c.img, box, image.NewUniform(col), image.Point{})
}

// dashed cuts a polyline into the runs its dash pattern draws (on, off,
// on, ... in pt); without a pattern it is one run.
func dashed(pts []point, dashes []float64) [][]point {
	total := 0.0
	for _, d := range dashes {
		total += d
	}
	if len(pts) < 2 || !(total > 0) {
		return [][]point{pts}
	}
	var runs [][]point
	var cur []point
	k, left := 0, dashes[0] // the dash under way and what is left of it
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		seg := math.Hypot(b.x-a.x, b.y-a.y)
		for pos := 0.0; pos < seg; {
			step := min(left, seg-pos)
			from, to := lerp(a, b, pos/seg), lerp(a, b, (pos+step)/seg)
			if k%2 == 0 {
				if len(cur) == 0 {
					cur = append(cur, from)
				}
				cur = append(cur, to)
			}
			pos += step
			if left -= step; left <= 1e-9 {
				if k%2 == 0 && len(cur) > 0 {
					runs, cur = append(runs, cur), nil
				}
				k = (k + 1) % len(dashes)
				left = dashes[k]
			}
		}
	}
	if len(cur) > 1 {
		runs = append(runs, cur)
	}
	return runs
}

func lerp(a, b point, t float64) point { return point{a.x + (b.x-a.x)*t, a.y + (b.y-a.y)*t} }

// segment is the quadrilateral of a line from a to b, hw either side.
func segment(a, b point, hw float64) []point {
	l := math.Hypot(b.x-a.x, b.y-a.y)
	if l == 0 {
		return []point{a}
	}
	nx, ny := -(b.y-a.y)/l*hw, (b.x-a.x)/l*hw
	return []point{{a.x + nx, a.y + ny}, {b.x + nx, b.y + ny}, {b.x - nx, b.y - ny}, {a.x - nx, a.y - ny}}
}

// disc is a circle of radius r as a polygon of n sides.
func disc(at point, r float64, n int) []point {
	pts := make([]point, n)
	for i := range pts {
		a := 2 * math.Pi * float64(i) / float64(n)
		pts[i] = point{at.x + r*math.Cos(a), at.y + r*math.Sin(a)}
	}
	return pts
}

// area is a polygon's signed area (the shoelace formula).
func area(poly []point) float64 {
	s := 0.0
	for i, p := range poly {
		q := poly[(i+1)%len(poly)]
		s += p.x*q.y - q.x*p.y
	}
	return s / 2
}

func reverse(poly []point) {
	for i, j := 0, len(poly)-1; i < j; i, j = i+1, j-1 {
		poly[i], poly[j] = poly[j], poly[i]
	}
}

func (c *pngCanvas) text(at point, s string, st textStyle) {
	if s == "" {
		return
	}
	along, across := c.tf.baseline(s, st)
	face := c.tf.face(st.size, c.dpi)
	src := image.NewUniform(st.color)
	if !st.upright {
		o := c.px(point{at.x + along, at.y + across})
		d := font.Drawer{Dst: c.img, Src: src, Face: face, Dot: fixed.Point26_6{X: toFixed(o.x), Y: toFixed(o.y)}}
		d.DrawString(s)
		return
	}
	// Upright: drawn level into a mask, which is turned a quarter to
	// the left onto the image. The baseline's start is then at
	// (at.x + across, at.y - along).
	a, dsc := c.tf.extent(st.size)
	w := pixels(c.tf.width(s, st.size), c.dpi) + 2
	h := pixels(a+dsc, c.dpi) + 2
	level := image.NewAlpha(image.Rect(0, 0, w, h))
	d := font.Drawer{Dst: level, Src: image.Opaque, Face: face, Dot: fixed.Point26_6{X: toFixed(1), Y: toFixed(a*c.scale + 1)}}
	d.DrawString(s)
	turned := image.NewAlpha(image.Rect(0, 0, h, w))
	for y := range h {
		for x := range w {
			turned.SetAlpha(y, w-1-x, level.AlphaAt(x, y))
		}
	}
	o := c.px(point{at.x + across - a, at.y - along})
	r := image.Rect(0, 0, h, w).Add(image.Pt(int(math.Round(o.x))-1, int(math.Round(o.y))-w+2))
	draw.DrawMask(c.img, r, src, image.Point{}, turned, image.Point{}, draw.Over)
}

func toFixed(v float64) fixed.Int26_6 { return fixed.Int26_6(math.Round(v * 64)) }

func (c *pngCanvas) writeTo(w io.Writer) error { return png.Encode(w, c.img) }
