package plot

import (
	"fmt"
	"image/color"
	"io"
	"slices"
	"strings"
)

// Panel titles and labels of the pictures of a pair and of a repeat.
const (
	TitleRunMaxima   = "Maximum IP-layer capacity (L3) of each run"
	TitleRunDelay    = "Delay variation of each run"
	TitleRunCapacity = "IP-layer capacity (L3) per Sub-Interval of each run"
	LabelRun         = "run"
	LabelIdleEnd     = "idle baseline ends"
)

// DirColor is the colour of a direction in the pictures of a pair and of
// a repeat: upstream blue, downstream orange (the first two connection
// colours).
func DirColor(upstream bool) color.Color {
	if upstream {
		return connColor[0]
	}
	return connColor[1]
}

// RenderDoc draws d in format f to w. A single test is drawn as Render
// draws it. A --bidirectional pair is one figure on one time axis, both
// directions in each panel in their own colours (DirColor): the capacity
// with each direction's maximum, the delay variation and the sequence
// errors, with the end of the idle baseline marked. A --repeat is the runs
// side by side: each run's maximum and delay variation against its number,
// with the median maximum, then every run's capacity per Sub-Interval over
// the test time; a run with nothing to draw is a gap, named in the heading.
func RenderDoc(w io.Writer, d *Doc, f Format) error {
	switch d.Kind {
	case Bidirectional:
		run := &d.Runs[0]
		panels, err := pairPanels(run)
		if err != nil {
			return err
		}
		head, sub := PairHeading(run)
		return renderFigure(w, f, head, sub, panels)
	case Repeat:
		panels, err := repeatPanels(d)
		if err != nil {
			return err
		}
		head, sub := RepeatHeading(d)
		return renderFigure(w, f, head, sub, panels)
	}
	return Render(w, d.Runs[0].Tests[0], f)
}

// PixelSize is the size of d's PNG in pixels.
func (d *Doc) PixelSize() (w, h int) {
	if d.Kind == Single {
		return PixelSize(d.Runs[0].Tests[0])
	}
	return pixelSize(3)
}

// offset is when half r of run starts on the pair's time axis: the later
// half starts its StartOffset after the other.
func (run *Run) offset(r *Result) float64 {
	if r.Upstream == (run.Offset < 0) {
		return max(run.Offset, -run.Offset)
	}
	return 0
}

func (run *Run) xs(r *Result) []float64 {
	xs := r.aggregateX()
	off := run.offset(r)
	for i := range xs {
		xs[i] += off
	}
	return xs
}

// loadedMax is a result's largest maximum (the loaded phase's in a
// half of a pair), else its largest Sub-Interval; Index -1 when none.
func loadedMax(r *Result) Maximum {
	best := Maximum{Index: -1}
	for _, m := range r.Maxima {
		if best.Index < 0 || m.Capacity > best.Capacity {
			best = m
		}
	}
	if best.Index >= 0 || len(r.Maxima) > 0 {
		return best
	}
	for i, iv := range r.Intervals {
		if best.Index < 0 || iv.Capacity > best.Capacity {
			best = Maximum{Capacity: iv.Capacity, Time: iv.Time, Index: i}
		}
	}
	return best
}

// PairHeading is a pair's two title lines.
func PairHeading(run *Run) (string, string) {
	first := run.Tests[0]
	head := testLead("Bidirectional", first)
	if run.IdleSubIntervals > 0 {
		head += fmt.Sprintf(" (%d idle)", run.IdleSubIntervals)
	}
	var maxima []string
	for _, r := range run.Tests {
		maxima = append(maxima, fmt.Sprintf("%s %.2f", dirShort(r.Upstream), loadedMax(r).Capacity))
	}
	head += "; maxima " + strings.Join(maxima, " / ") + " Mbps"
	_, sub := Heading(first)
	if run.Problem != "" {
		sub = joinNonEmpty(sub, run.Problem)
	}
	return head, sub
}

// RepeatHeading is a repeat's two title lines.
func RepeatHeading(d *Doc) (string, string) {
	var first *Result
	pair := false
	for _, run := range d.Runs {
		if len(run.Tests) > 0 && first == nil {
			first = run.Tests[0]
		}
		pair = pair || len(run.Tests) > 1 || run.IdleSubIntervals > 0
	}
	what := strings.ToLower(first.Direction()) + " tests"
	if pair {
		what = "bidirectional tests"
	}
	head := fmt.Sprintf("%d %s", len(d.Runs), what)
	if d.Requested > len(d.Runs) {
		head += fmt.Sprintf(" (of %d asked)", d.Requested)
	}
	if first.Host != "" {
		head += " to " + first.Host
	}
	var medians, ranges []string
	for _, up := range directions(d) {
		if s, ok := runStat(d, up); ok {
			medians = append(medians, fmt.Sprintf("%s %.2f", dirShort(up), s.median))
			ranges = append(ranges, fmt.Sprintf("%s %.2f-%.2f", dirShort(up), s.min, s.max))
		}
	}
	head += "; median maxima " + strings.Join(medians, " / ") + " Mbps"
	problems := []string{"maxima " + strings.Join(ranges, " / ") + " Mbps"}
	for _, run := range d.Runs {
		if run.Problem != "" || run.Status != 0 {
			problems = append(problems, fmt.Sprintf("run %d: ErrorStatus %d%s", run.N, run.Status, prefixed(": ", run.Problem)))
		}
	}
	_, sub := Heading(first)
	if i := strings.Index(sub, "; started "); i >= 0 { // the first run's start is not the repeat's story
		sub = sub[:i]
	}
	return head, joinNonEmpty(sub, strings.Join(problems, "; "))
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func dirShort(upstream bool) string {
	if upstream {
		return "up"
	}
	return "down"
}

func dirName(upstream bool) string {
	if upstream {
		return "upstream"
	}
	return "downstream"
}

// directions are the directions d measured, upstream first.
func directions(d *Doc) []bool {
	var seen [2]bool
	for _, run := range d.Runs {
		for _, r := range run.Tests {
			if r.Upstream {
				seen[0] = true
			} else {
				seen[1] = true
			}
		}
	}
	var out []bool
	if seen[0] {
		out = append(out, true)
	}
	if seen[1] {
		out = append(out, false)
	}
	return out
}

// test is run's test in direction up, nil if none.
func (run *Run) test(up bool) *Result {
	for _, r := range run.Tests {
		if r.Upstream == up {
			return r
		}
	}
	return nil
}

// runStat is the median, minimum and maximum of the runs' maxima in
// direction up.
func runStat(d *Doc, up bool) (s struct{ median, min, max float64 }, ok bool) {
	var v []float64
	for i := range d.Runs {
		if r := d.Runs[i].test(up); r != nil {
			v = append(v, loadedMax(r).Capacity)
		}
	}
	if len(v) == 0 {
		return s, false
	}
	sorted := slices.Sorted(slices.Values(v))
	n := len(sorted)
	s.median = sorted[n/2]
	if n%2 == 0 {
		s.median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	s.min, s.max = sorted[0], sorted[n-1]
	return s, true
}

func pairPanels(run *Run) ([]*panel, error) {
	capP := newPanel(TitleCapacity, "Mbps")
	delayWhat := "RTT variation"
	if run.Tests[0].OneWay {
		delayWhat = "one-way delay variation"
	}
	if run.Tests[0].FineDelays || run.Tests[len(run.Tests)-1].FineDelays {
		delayWhat += " (to the µs where udpstp measured it)"
	}
	delayP := newPanel(TitleDelay+": "+delayWhat, "ms")
	errP := newPanel(TitleErrors+" (solid lost, dashed out of order, dotted duplicated)", "datagrams")
	xmax, ymax := 1.0, [3]float64{1, 1, 1}
	for _, r := range run.Tests {
		xs, c, name := run.xs(r), DirColor(r.Upstream), r.Direction()
		xmax = max(xmax, xs[len(xs)-1])
		caps := column(r, func(iv *Interval) float64 { return iv.Capacity })
		if err := series(capP, xs, caps, c, 1.6, nil, name); err != nil {
			return nil, err
		}
		if m := loadedMax(r); m.Index >= 0 {
			// Upstream's label above its ring, downstream's below, so
			// that maxima at one time do not write over each other.
			if err := ring(capP, xs[m.Index], m.Capacity, fmt.Sprintf("%s maximum %.2f Mbps", strings.ToLower(name), m.Capacity), !r.Upstream); err != nil {
				return nil, err
			}
		}
		avg, mx := func(iv *Interval) float64 { return iv.RTTAvg }, func(iv *Interval) float64 { return iv.RTTMax }
		if r.OneWay {
			avg, mx = func(iv *Interval) float64 { return iv.PDVAvg }, func(iv *Interval) float64 { return iv.PDVMax }
		}
		maxes, avgs := column(r, mx), column(r, avg)
		if err := series(delayP, xs, maxes, c, 1.4, nil, name+", maximum"); err != nil {
			return nil, err
		}
		if err := series(delayP, xs, avgs, c, 1.4, []float64{4, 2}, name+", average"); err != nil {
			return nil, err
		}
		loss := column(r, func(iv *Interval) float64 { return iv.Loss })
		ooo := column(r, func(iv *Interval) float64 { return iv.Reordered })
		dup := column(r, func(iv *Interval) float64 { return iv.Dup })
		if err := series(errP, xs, loss, c, 1.4, nil, name); err != nil {
			return nil, err
		}
		if err := series(errP, xs, ooo, c, 1.4, []float64{4, 2}, ""); err != nil {
			return nil, err
		}
		if err := series(errP, xs, dup, c, 1.4, []float64{1, 2}, ""); err != nil {
			return nil, err
		}
		for i, col := range [][]float64{caps, maxes, loss} {
			for _, v := range col {
				ymax[i] = max(ymax[i], v)
			}
		}
		for _, v := range append(ooo, dup...) {
			ymax[2] = max(ymax[2], v)
		}
	}
	panels := []*panel{capP, delayP, errP}
	for i, p := range panels {
		p.ymax = ymax[i] * 1.25
		p.xmin, p.xmax = 0, xmax
	}
	// The end of the idle baseline: the first half's last idle
	// Sub-Interval, on the shared axis.
	if first := run.Tests[0]; run.IdleSubIntervals > 0 && run.IdleSubIntervals <= len(first.Intervals) {
		x := run.xs(first)[run.IdleSubIntervals-1]
		for i, p := range panels {
			label := ""
			if i == 0 {
				label = LabelIdleEnd
			}
			if err := vline(p, x, p.ymax, label); err != nil {
				return nil, err
			}
		}
	}
	errP.xlabel = LabelTime
	return panels, nil
}

// ring marks a maximum at (x, y) with a red ring and its label, above
// and to the left of it, or below with below.
func ring(p *panel, x, y float64, text string, below bool) error {
	if !isFinite(x) || !isFinite(y) {
		return fmt.Errorf("plot: a maximum at (%g, %g) that is not a number", x, y)
	}
	p.grow(y)
	st := textStyle{size: 9, color: maxColor, xalign: 1, yalign: 1}
	dy := 5.0
	if below {
		st.yalign, dy = 0, -5
	}
	p.marks = append(p.marks,
		&ringMark{x: x, y: y, radius: 5, style: lineStyle{color: maxColor, width: 0.75}},
		&labelMark{x: x, y: y, dx: -7, dy: dy, text: text, style: st})
	return nil
}

// markColor is the grey of a marker line that is no data.
var markColor = color.Gray{Y: 140}

// vline draws a grey dotted vertical line at x up to ymax, labelled at
// its top when label is not "".
func vline(p *panel, x, ymax float64, label string) error {
	if err := p.addLine([]float64{x, x}, []float64{0, ymax}, lineStyle{color: markColor, width: 1, dashes: []float64{2, 3}}, 0, ""); err != nil {
		return err
	}
	if label != "" {
		p.marks = append(p.marks, &labelMark{x: x, y: ymax, dx: 3, dy: -2, text: label,
			style: textStyle{size: 9, color: color.Gray{Y: 90}}})
	}
	return nil
}

func repeatPanels(d *Doc) ([]*panel, error) {
	maxP := newPanel(TitleRunMaxima, "Mbps")
	delayP := newPanel(TitleRunDelay+" (maximum solid, average dashed, over its Sub-Intervals)", "ms")
	both := len(directions(d)) == 2
	capTitle := TitleRunCapacity
	if both {
		capTitle += " (upstream solid, downstream dashed)"
	}
	capP := newPanel(capTitle, "Mbps")
	var ymax [3]float64
	for _, up := range directions(d) {
		runs, maxima, dmax, davg := runFigures(d, up)
		if len(runs) == 0 {
			continue
		}
		c := DirColor(up)
		if err := series(maxP, runs, maxima, c, 1.6, nil, dirName(up)); err != nil {
			return nil, err
		}
		if s, ok := runStat(d, up); ok {
			med := lineStyle{color: c, width: 1, dashes: []float64{6, 3}}
			name := fmt.Sprintf("%s median %.2f Mbps", dirName(up), s.median)
			if err := maxP.addLine([]float64{1, float64(len(d.Runs))}, []float64{s.median, s.median}, med, 0, name); err != nil {
				return nil, err
			}
		}
		if err := series(delayP, runs, dmax, c, 1.4, nil, dirName(up)); err != nil {
			return nil, err
		}
		if err := series(delayP, runs, davg, c, 1.4, []float64{4, 2}, ""); err != nil {
			return nil, err
		}
		for _, v := range maxima {
			ymax[0] = max(ymax[0], v)
		}
		for _, v := range dmax {
			ymax[1] = max(ymax[1], v)
		}
	}
	xmax, capMax, err := runCapacities(capP, d, both)
	if err != nil {
		return nil, err
	}
	ymax[2] = capMax
	// The runs in the file, not those asked for (Requested, which the
	// heading names): a run axis is as long as the file, never longer.
	runMax := float64(len(d.Runs))
	for i, p := range []*panel{maxP, delayP, capP} {
		p.ymax = max(ymax[i]*1.25, 1)
		if i < 2 {
			p.xmin, p.xmax = 0.5, runMax+0.5
			p.xticks = runTicks{int(runMax)}
		} else {
			p.xmin, p.xmax = 0, xmax
		}
	}
	delayP.xlabel = LabelRun
	capP.xlabel = LabelTime
	return []*panel{maxP, delayP, capP}, nil
}

// runFigures gives, for each run with a test in direction up, its number,
// its loaded maximum, and the largest and the mean of its Sub-Intervals'
// delay (the round trip, or the one-way variation where the test measured
// one way).
func runFigures(d *Doc, up bool) (runs, maxima, dmax, davg []float64) {
	for i := range d.Runs {
		r := d.Runs[i].test(up)
		if r == nil {
			continue
		}
		runs = append(runs, float64(d.Runs[i].N))
		maxima = append(maxima, loadedMax(r).Capacity)
		mx, avg, n := 0.0, 0.0, 0.0
		for _, iv := range r.Intervals {
			v, a := iv.RTTMax, iv.RTTAvg
			if r.OneWay {
				v, a = iv.PDVMax, iv.PDVAvg
			}
			mx, avg, n = max(mx, v), avg+a, n+1
		}
		dmax, davg = append(dmax, mx), append(davg, avg/max(n, 1))
	}
	return runs, maxima, dmax, davg
}

// runCapacities draws every run's Sub-Interval capacities over time on capP
// (downstream dashed where both directions ran; one legend entry per run,
// or one for all beyond legendMax runs) and returns the longest time axis
// and the largest capacity drawn.
func runCapacities(capP *panel, d *Doc, both bool) (xmax, ymax float64, err error) {
	xmax = 1
	for i := range d.Runs {
		run := &d.Runs[i]
		named := false
		for _, r := range run.Tests {
			var dashes []float64
			if both && !r.Upstream {
				dashes = []float64{4, 2}
			}
			name := ""
			if !named && (len(d.Runs) <= legendMax || i == 0) {
				name = fmt.Sprintf("run %d", run.N)
				if len(d.Runs) > legendMax {
					name = fmt.Sprintf("each of %d runs", len(d.Runs))
				}
				named = true
			}
			xs := run.xs(r)
			caps := column(r, func(iv *Interval) float64 { return iv.Capacity })
			if err := series(capP, xs, caps, ConnColor(run.N), 1.2, dashes, name); err != nil {
				return 0, 0, err
			}
			xmax = max(xmax, xs[len(xs)-1])
			for _, v := range caps {
				ymax = max(ymax, v)
			}
		}
	}
	return xmax, ymax, nil
}

// runTicks labels the run axis at whole runs, at most about 10 labels.
type runTicks struct{ n int }

func (t runTicks) ticks(lo, hi float64) []tick {
	step := max(1, (t.n+9)/10)
	var ticks []tick
	for i := 1; i <= t.n; i++ {
		tk := tick{value: float64(i)}
		if (i-1)%step == 0 {
			tk.label = fmt.Sprint(i)
		}
		ticks = append(ticks, tk)
	}
	return ticks
}
