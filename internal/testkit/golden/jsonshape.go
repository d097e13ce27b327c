package golden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// SameJSONShape checks that got has the keys of want in the same order and
// nesting, with values of the same JSON types (an integer where want has
// one, a number with decimals where it has one), every array element
// against the shape of want's: what a parser written for OB-UDPST's output
// relies on, values aside.
func SameJSONShape(got, want []byte) error {
	g, err := jsonShape(got)
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	w, err := jsonShape(want)
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	for i := 0; i < len(g) || i < len(w); i++ {
		switch {
		case i >= len(g):
			return fmt.Errorf("missing %s", w[i])
		case i >= len(w):
			return fmt.Errorf("extra %s", g[i])
		case g[i] != w[i]:
			return fmt.Errorf("%s where the reference has %s", g[i], w[i])
		}
	}
	return nil
}

// jsonShape lists "path type" for each distinct path of a document, in
// order, array elements folded to [].
func jsonShape(doc []byte) ([]string, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var out []string
	seen := map[string]bool{}
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		add := func(typ string) {
			if !seen[path] {
				seen[path] = true
				out = append(out, path+" "+typ)
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' {
				add("object")
				for d.More() {
					k, err := d.Token()
					if err != nil {
						return err
					}
					if err := walk(path + "." + k.(string)); err != nil {
						return err
					}
				}
			} else {
				add("array")
				for d.More() {
					if err := walk(path + "[]"); err != nil {
						return err
					}
				}
			}
			_, err := d.Token() // the closing delimiter
			return err
		case json.Number:
			if strings.ContainsAny(v.String(), ".eE") {
				add("decimal")
			} else {
				add("integer")
			}
		case string:
			add("string")
		case bool:
			add("bool")
		default:
			add("null")
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data")
	}
	return out, nil
}
