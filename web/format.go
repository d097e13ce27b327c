//go:build !small

package web

import (
	"html/template"
	"strconv"
	"time"

	"github.com/udpstp/udpstp/store"
)

// none is how a figure a test did not measure shows.
const none = "–"

// funcs are the templates' formatting functions.
var funcs = template.FuncMap{
	"num": func(v *float64, prec int) string {
		if v == nil {
			return none
		}
		return strconv.FormatFloat(*v, 'f', prec, 64)
	},
	// fig is a figure with its unit, or none without one.
	"fig": func(v *float64, prec int, unit string) string {
		if v == nil {
			return none
		}
		return strconv.FormatFloat(*v, 'f', prec, 64) + " " + unit
	},
	"pct": func(v *float64) string {
		if v == nil {
			return none
		}
		return strconv.FormatFloat(100**v, 'g', 3, 64) + "%"
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return none
		}
		return t.Local().Format("2006-01-02 15:04")
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"dur": func(a, b time.Time) string {
		if a.IsZero() || b.Before(a) {
			return none
		}
		return b.Sub(a).Round(100 * time.Millisecond).String()
	},
	"f1":       func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"statusOf": func(st store.Status) string { return string(st) },
	// query is a query string the page built with url.Values.Encode: a
	// link's whole query, its & and = kept (html/template would escape a
	// plain string after "?" as one parameter's value).
	"query": func(q string) template.URL { return template.URL(q) },
}
