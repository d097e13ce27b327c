package agent

import (
	"strconv"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyLines maps each key of a TOML document to the line it is on, so that
// a check after decoding (a cron expression, a client option) names the
// line as the decoder does. Keys are dotted paths; an array of tables adds
// the element's index: "test.1.options.test-time".
func keyLines(b []byte) (map[string]int, error) {
	lines := map[string]int{}
	counts := map[string]int{} // arrays of tables: elements so far
	var p unstable.Parser
	p.Reset(b)
	var prefix string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts := keyParts(e)
			path := resolvePath("", parts, counts)
			if e.Kind == unstable.ArrayTable {
				base := resolvePath("", parts[:len(parts)-1], counts)
				if base != "" {
					base += "."
				}
				base += parts[len(parts)-1]
				path = base + "." + strconv.Itoa(counts[base])
				counts[base]++
			}
			prefix = path
			lines[prefix] = line(&p, e)
		case unstable.KeyValue:
			keyValueLines(&p, e, prefix, counts, lines)
		}
	}
	return lines, p.Error()
}

// keyValueLines records a key = value line, and the keys of an inline
// table value.
func keyValueLines(p *unstable.Parser, e *unstable.Node, prefix string, counts map[string]int, lines map[string]int) {
	path := resolvePath(prefix, keyParts(e), counts)
	lines[path] = line(p, e)
	if v := e.Value(); v.Kind == unstable.InlineTable {
		for it := v.Children(); it.Next(); {
			keyValueLines(p, it.Node(), path, counts, lines)
		}
	}
}

func keyParts(e *unstable.Node) []string {
	var parts []string
	for it := e.Key(); it.Next(); {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

// resolvePath joins parts to prefix; a part naming an array of tables
// means its last element, as TOML's [a.b] after [[a]] does.
func resolvePath(prefix string, parts []string, counts map[string]int) string {
	path := prefix
	for _, k := range parts {
		if path != "" {
			path += "."
		}
		path += k
		if n := counts[path]; n > 0 {
			path += "." + strconv.Itoa(n-1)
		}
	}
	return path
}

// line is the line of a key = value, or of a table header (which has no
// range of its own: its first key's).
func line(p *unstable.Parser, e *unstable.Node) int {
	r := e.Raw
	if r.Length == 0 {
		if it := e.Key(); it.Next() {
			r = it.Node().Raw
		}
	}
	return p.Shape(r).Start.Line
}
