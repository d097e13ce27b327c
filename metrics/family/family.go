// Package family declares udpstp's Prometheus metric families and the
// samples made of them, in one style for every exporter: the server's
// endpoint (package metrics), the agent's /metrics and /probe (package
// agent) and a client's node_exporter textfile (report/textfile). Each
// family is declared once, as a Family value with its name, help, type
// and label names, beside the code that reports it (or, for the server's
// counters, in the counter tables that metrics reads); its samples are
// made from it when they are read, at a scrape or when the textfile is
// written. The exporters that serve HTTP build the client library's
// constant metrics from them (metrics.Collector); the textfile writes
// them in the text format itself (WriteText), so that a client does not
// carry the Prometheus client library: this package imports none of it.
//
// Check refuses two declarations of one name that differ in help, type
// or labels; metrics' TestFamiliesOnce runs it over every family the
// binary can expose.
package family

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Type is a family's metric type.
type Type uint8

const (
	Counter   Type = iota // a count since the process started; its name ends in "_total"
	Gauge                 // a level that goes down as well as up
	Histogram             // observations in buckets
)

func (t Type) String() string {
	switch t {
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	case Histogram:
		return "histogram"
	}
	return "untyped"
}

// Family is one metric family as it is exported.
type Family struct {
	// Name is the full name: the "udpstp_" prefix, base units (_bytes,
	// _seconds, _bytes_per_second) and "_total" for a counter, as
	// Prometheus's conventions have it.
	Name string
	// Help says what is measured, in a sentence without a final period.
	Help   string
	Type   Type
	Labels []string // label names, in the order a Sample gives their values
}

// Sample is one series' value of a family.
type Sample struct {
	Family *Family
	Values []string // one per Family.Labels, in their order
	Value  float64  // a counter's or a gauge's
	// Hist is a Histogram's value; nil for the other types.
	Hist *HistogramValue
}

// HistogramValue is a histogram's observations.
type HistogramValue struct {
	Count   uint64
	Sum     float64
	Buckets map[float64]uint64 // observations at or below each upper bound (cumulative)
}

// Check returns an error naming every name declared by two Families
// that differ in help, type or the set of label names; fams may list one
// Family several times.
func Check(fams []*Family) error {
	first := map[string]*Family{}
	var problems []string
	for _, f := range fams {
		g, ok := first[f.Name]
		if !ok {
			first[f.Name] = f
			continue
		}
		if g.Help != f.Help || g.Type != f.Type || !slices.Equal(sorted(g.Labels), sorted(f.Labels)) {
			problems = append(problems, fmt.Sprintf("%s: %s %q %v and %s %q %v", f.Name,
				g.Type, g.Help, g.Labels, f.Type, f.Help, f.Labels))
		}
	}
	if problems != nil {
		return fmt.Errorf("metric families declared twice, differently: %s", strings.Join(problems, "; "))
	}
	return nil
}

// sorted is a sorted copy of labels: their order is the Values' in a
// Sample, not the family's (the format sorts them).
func sorted(labels []string) []string { return slices.Sorted(slices.Values(labels)) }

// WriteText writes samples, counters and gauges, in the Prometheus text
// exposition format as the client library writes it: families sorted by
// name, each with its # HELP and # TYPE lines, labels sorted by name,
// series sorted by their label values. It is what node_exporter's
// textfile collector reads (report/textfile). A Histogram's samples are
// not written.
func WriteText(samples []Sample) []byte {
	type series struct {
		f      *Family
		labels [][2]string
		value  float64
	}
	var ss []series
	for _, s := range samples {
		if s.Family.Type == Histogram {
			continue
		}
		x := series{f: s.Family, value: s.Value}
		for i, n := range s.Family.Labels {
			v := ""
			if i < len(s.Values) {
				v = s.Values[i]
			}
			x.labels = append(x.labels, [2]string{n, v})
		}
		slices.SortStableFunc(x.labels, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		ss = append(ss, x)
	}
	slices.SortStableFunc(ss, func(a, b series) int {
		if c := strings.Compare(a.f.Name, b.f.Name); c != 0 {
			return c
		}
		return slices.CompareFunc(a.labels, b.labels, func(x, y [2]string) int { return strings.Compare(x[1], y[1]) })
	})
	var b bytes.Buffer
	for i, s := range ss {
		if i == 0 || ss[i-1].f.Name != s.f.Name {
			b.WriteString("# HELP " + s.f.Name + " " + helpEscaper.Replace(s.f.Help) + "\n")
			b.WriteString("# TYPE " + s.f.Name + " " + s.f.Type.String() + "\n")
		}
		b.WriteString(s.f.Name)
		for j, l := range s.labels {
			if j == 0 {
				b.WriteByte('{')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(l[0] + `="` + valueEscaper.Replace(l[1]) + `"`)
		}
		if len(s.labels) > 0 {
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.WriteString(formatValue(s.value))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// The format's escapes: a help text escapes backslash and newline, a
// label value the double quote too.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// formatValue writes a value as the format spells it.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
