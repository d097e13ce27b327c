//go:build !small

package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/udpstp/udpstp/store"
)

// The charts' drawing area, in the SVG's own units (the SVG scales to the
// page's width; CSS keeps its height).
const (
	chartW, chartH  = 720, 220
	padL, padR      = 52, 12
	padT, padB      = 10, 26
	markerMaxPoints = 60 // a line of at most this many points has a dot at each
)

// chart is one time chart of the overview.
type chart struct {
	ID, Title, Unit string
	W, H            int
	Left, Right     int // the drawing area's x bounds
	Top, Bottom     int // and y bounds
	Lines           []line
	XTicks, YTicks  []tick
	Points          int // points in all lines
}

// line is one series of a chart.
type line struct {
	Name, Class string
	Points      string // "x,y x,y ..." for a polyline
	N           int
	Dots        []dot // the points, when few enough to mark
}

type dot struct{ X, Y float64 }

type tick struct {
	Pos    float64
	Label  string
	Anchor string // the label's text-anchor: the range's ends stay inside
}

// seriesSpec is one line: a figure of the results a direction selects.
type seriesSpec struct {
	name, class, figure, direction string
	scale                          float64 // the figure's unit to the chart's
}

// chartSpecs are the overview's charts.
var chartSpecs = []struct {
	id, title, unit string
	series          []seriesSpec
}{
	{"capacity", "Capacity (maximum IP-layer)", "Mbit/s", []seriesSpec{
		{"down", "s1", "max_mbps", "down", 1},
		{"up", "s2", "max_mbps", "up", 1},
		{"both at once", "s3", "max_mbps", "bidirectional", 1},
	}},
	{"delay", "RTT and latency under load", "ms", []seriesSpec{
		{"RTT minimum", "s1", "rtt_min_ms", "", 1},
		{"latency under load", "s2", "loaded_ms", "", 1},
	}},
	{"loss", "Loss at the maximum", "%", []seriesSpec{
		{"loss", "s1", "loss_ratio", "", 100},
	}},
}

// charts reads the series of v from the store, reduced to the charts'
// resolution there, and lays them out. The series are read at once: each
// is a scan of the range's rows, and a store serves several readers.
func (s *server) charts(ctx context.Context, v view) ([]chart, error) {
	series := make([][][]store.Point, len(chartSpecs))
	errs := make([][]error, len(chartSpecs))
	var wg sync.WaitGroup
	for i, spec := range chartSpecs {
		series[i] = make([][]store.Point, len(spec.series))
		errs[i] = make([]error, len(spec.series))
		for j, ss := range spec.series {
			wg.Go(func() {
				f := v.filter(0)
				f.Direction = ss.direction
				pts, err := s.cfg.Store.Series(ctx, f, ss.figure, s.cfg.Points)
				if err != nil {
					err = fmt.Errorf("series %s %s: %w", ss.figure, ss.direction, err)
				}
				series[i][j], errs[i][j] = pts, err
			})
		}
	}
	wg.Wait()
	for i := range errs {
		if err := errors.Join(errs[i]...); err != nil {
			return nil, err
		}
	}
	if v.Fit {
		v = fitted(v, series)
	}
	var out []chart
	for i, spec := range chartSpecs {
		c := chart{ID: spec.id, Title: spec.title, Unit: spec.unit, W: chartW, H: chartH,
			Left: padL, Right: chartW - padR, Top: padT, Bottom: chartH - padB}
		top := 0.0
		for j, ss := range spec.series {
			for k := range series[i][j] {
				p := &series[i][j][k]
				p.V *= ss.scale
				if !math.IsInf(p.V, 0) && !math.IsNaN(p.V) {
					top = max(top, p.V)
				}
			}
		}
		top = niceCeil(top)
		for j, ss := range spec.series {
			if len(series[i][j]) == 0 && len(spec.series) > 1 {
				continue // a direction never tested is no line
			}
			c.Lines = append(c.Lines, layLine(ss, series[i][j], v, top))
			c.Points += len(series[i][j])
		}
		c.YTicks = yTicks(top)
		c.XTicks = xTicks(v)
		out = append(out, c)
	}
	return out, nil
}

// minFitSpan is the shortest time axis a fitted chart has (an hour: a
// first result a minute old is not stretched over the whole width), and
// fitPad the share of the axis left before the first result.
const (
	minFitSpan = time.Hour
	fitPad     = 0.05
)

// fitted is v with its start moved up to just before the first point of
// the series, when that is later than v's start: the axis spans the data
// (at least minFitSpan), so that a new probe's first results spread over
// the chart. The points are already those of v's range, so none is left
// out.
func fitted(v view, series [][][]store.Point) view {
	first := v.Now
	for _, c := range series {
		for _, s := range c {
			if len(s) > 0 && s[0].T.Before(first) {
				first = s[0].T
			}
		}
	}
	span := max(v.Now.Sub(first), minFitSpan)
	span += time.Duration(float64(span) * fitPad)
	if since := v.Now.Add(-span); since.After(v.Since) {
		v.Since = since
	}
	return v
}

// layLine places a series' points in the drawing area.
func layLine(ss seriesSpec, pts []store.Point, v view, top float64) line {
	l := line{Name: ss.name, Class: ss.class, N: len(pts)}
	var b strings.Builder
	for _, p := range pts {
		x, y := xOf(p.T, v), yOf(p.V, top)
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(y, 'f', 1, 64))
		if len(pts) <= markerMaxPoints {
			l.Dots = append(l.Dots, dot{x, y})
		}
	}
	l.Points = b.String()
	return l
}

func xOf(t time.Time, v view) float64 {
	span := v.Now.Sub(v.Since)
	f := float64(t.Sub(v.Since)) / float64(span)
	f = min(max(f, 0), 1)
	return padL + f*float64(chartW-padL-padR)
}

func yOf(val, top float64) float64 {
	if math.IsNaN(val) || top <= 0 {
		val = 0
	}
	f := min(max(val/top, 0), 1)
	return float64(chartH-padB) - f*float64(chartH-padB-padT)
}

// niceCeil is the smallest of 1, 2, 2.5 and 5 times a power of ten at or
// above v (1 for nothing to show), so that the y axis's ticks are round.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func yTicks(top float64) []tick {
	var ts []tick
	for i := 0; i <= 4; i++ {
		val := top * float64(i) / 4
		ts = append(ts, tick{Pos: yOf(val, top), Label: strconv.FormatFloat(val, 'g', 4, 64)})
	}
	return ts
}

// xTicks are six labels along the range, in the time zone of the process.
func xTicks(v view) []tick {
	span := v.Now.Sub(v.Since)
	layout := "Jan 2"
	switch {
	case span <= 36*time.Hour:
		layout = "15:04"
	case span > 90*24*time.Hour:
		layout = "Jan 2006"
	}
	var ts []tick
	for i := 0; i <= 5; i++ {
		t := v.Since.Add(span * time.Duration(i) / 5)
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 5:
			anchor = "end"
		}
		ts = append(ts, tick{Pos: xOf(t, v), Label: t.Local().Format(layout), Anchor: anchor})
	}
	return ts
}
