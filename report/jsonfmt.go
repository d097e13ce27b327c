package report

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A tiny ordered JSON document and a printer that reproduces the output of
// the cJSON copy patched by OB-UDPST: key order as inserted, numbers with a
// per-value precision, and cJSON's formatted layout. encoding/json can do
// neither the ordering of a map nor these number forms.

// jval is a node of the document: *jobj, jarr, jstr, jint or jnum.
type jval interface{}

// jobj is an object whose keys keep their insertion order.
type jobj struct {
	keys []string
	vals []jval
}

type (
	jarr []jval
	jstr string
	jint int64
	// jnum is a number printed with a precision (cJSON_AddNumberPToObject):
	// p > 0 decimals, or -9 for 9 significant digits.
	jnum struct {
		v float64
		p int
	}
)

// Precisions used by OB-UDPST.
const (
	precSeconds = 1  // "Seconds"
	precPercent = 2  // percentages and Mbps
	precRatio   = 9  // ratios
	precDelay   = -9 // delays in seconds
)

func (o *jobj) add(k string, v jval)           { o.keys = append(o.keys, k); o.vals = append(o.vals, v) }
func (o *jobj) str(k, s string)                { o.add(k, jstr(s)) }
func (o *jobj) int(k string, n int64)          { o.add(k, jint(n)) }
func (o *jobj) num(k string, v float64, p int) { o.add(k, jnum{v, p}) }
func (o *jobj) time(k string, wall int64)      { o.add(k, jstr(formatTime(wall))) }
func (o *jobj) flag(k string, b bool)          { o.add(k, jint(b2i(b))) }
func (o *jobj) u32(k string, n uint32)         { o.add(k, jint(int64(n))) }
func (o *jobj) obj(k string) *jobj             { c := &jobj{}; o.add(k, c); return c }

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// formatNumber prints v as OB-UDPST's cJSON does for precision p (every
// jnum has one; integers are jint):
// any value exactly 0: "0.0";
// p > 0: "%.pf"; p < 0: "%.-pg", and "%.1f" instead when that has no
// decimal point (1 -> "1.0", but also 1e-05 -> "0.0").
func formatNumber(v float64, p int) string {
	if v == 0 {
		p = 1
	}
	if p > 0 {
		return strconv.FormatFloat(v, 'f', p, 64)
	}
	s := strconv.FormatFloat(v, 'g', -p, 64)
	if !strings.Contains(s, ".") {
		s = strconv.FormatFloat(v, 'f', 1, 64)
	}
	return s
}

// formatTime prints a wall-clock time (ns since the epoch) as OB-UDPST's
// UTC timestamps: YYYY-MM-DDTHH:MM:SS.uuuuuuZ (microseconds truncated).
func formatTime(wall int64) string {
	t := time.Unix(0, wall).UTC()
	return t.Format("2006-01-02T15:04:05") + fmt.Sprintf(".%06dZ", t.Nanosecond()/1000)
}

// render prints v; formatted selects cJSON's indented layout (one key per
// line, tab indentation, a tab after the colon, ", " between array
// elements), otherwise no whitespace at all.
func render(v jval, formatted bool) []byte {
	var b bytes.Buffer
	p := printer{b: &b, formatted: formatted}
	p.value(v)
	return b.Bytes()
}

type printer struct {
	b         *bytes.Buffer
	formatted bool
	depth     int
}

func (p *printer) value(v jval) {
	switch v := v.(type) {
	case *jobj:
		p.object(v)
	case jarr:
		p.array(v)
	case jstr:
		p.string(string(v))
	case jint:
		p.b.WriteString(strconv.FormatInt(int64(v), 10))
	case jnum:
		p.b.WriteString(formatNumber(v.v, v.p))
	default:
		panic(fmt.Sprintf("report: unknown JSON node %T", v))
	}
}

func (p *printer) tabs(n int) {
	for range n {
		p.b.WriteByte('\t')
	}
}

func (p *printer) object(o *jobj) {
	p.b.WriteByte('{')
	p.depth++
	if p.formatted {
		p.b.WriteByte('\n')
	}
	for i, k := range o.keys {
		if p.formatted {
			p.tabs(p.depth)
		}
		p.string(k)
		p.b.WriteByte(':')
		if p.formatted {
			p.b.WriteByte('\t')
		}
		p.value(o.vals[i])
		if i < len(o.keys)-1 {
			p.b.WriteByte(',')
		}
		if p.formatted {
			p.b.WriteByte('\n')
		}
	}
	if p.formatted {
		p.tabs(p.depth - 1)
	}
	p.b.WriteByte('}')
	p.depth--
}

func (p *printer) array(a jarr) {
	p.b.WriteByte('[')
	p.depth++
	for i, v := range a {
		p.value(v)
		if i < len(a)-1 {
			p.b.WriteByte(',')
			if p.formatted {
				p.b.WriteByte(' ')
			}
		}
	}
	p.b.WriteByte(']')
	p.depth--
}

// string escapes as cJSON does: quote, backslash and the usual control
// characters by name, other bytes below 32 as \u00xx, everything else raw.
func (p *printer) string(s string) {
	p.b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"', '\\':
			p.b.WriteByte('\\')
			p.b.WriteByte(c)
		case '\b':
			p.b.WriteString(`\b`)
		case '\f':
			p.b.WriteString(`\f`)
		case '\n':
			p.b.WriteString(`\n`)
		case '\r':
			p.b.WriteString(`\r`)
		case '\t':
			p.b.WriteString(`\t`)
		default:
			if c < 32 {
				fmt.Fprintf(p.b, `\u%04x`, c)
			} else {
				p.b.WriteByte(c)
			}
		}
	}
	p.b.WriteByte('"')
}
