package textfile

// The Prometheus text exposition format, gauges only: what node_exporter's
// textfile collector reads. Written here rather than through the
// Prometheus client library so that a client does not carry that library
// (the server's endpoint, package metrics, does). As the library writes
// it: families sorted by name, each with its # HELP and # TYPE lines,
// labels sorted by name, series sorted by their label values.

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
)

// label is one label of a sample.
type label struct{ Name, Value string }

// sample is one gauge's value.
type sample struct {
	Name   string // the full metric name
	Help   string // a sentence without a final period
	Labels []label
	Value  float64
}

// render writes samples in the text format.
func render(samples []sample) []byte {
	for i := range samples {
		samples[i].Labels = slices.Clone(samples[i].Labels)
		slices.SortStableFunc(samples[i].Labels, func(a, b label) int { return strings.Compare(a.Name, b.Name) })
	}
	slices.SortStableFunc(samples, func(a, b sample) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return slices.CompareFunc(a.Labels, b.Labels, func(x, y label) int { return strings.Compare(x.Value, y.Value) })
	})
	var b bytes.Buffer
	for i, s := range samples {
		if i == 0 || samples[i-1].Name != s.Name {
			b.WriteString("# HELP " + s.Name + " " + helpEscaper.Replace(s.Help) + "\n")
			b.WriteString("# TYPE " + s.Name + " gauge\n")
		}
		b.WriteString(s.Name)
		for j, l := range s.Labels {
			if j == 0 {
				b.WriteByte('{')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(l.Name + `="` + valueEscaper.Replace(l.Value) + `"`)
		}
		if len(s.Labels) > 0 {
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.WriteString(formatValue(s.Value))
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
