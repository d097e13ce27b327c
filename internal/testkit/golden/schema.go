package golden

// A JSON Schema (draft 2020-12) of OB-UDPST 9.0.0's client JSON result,
// derived from its own results (the client.json of every scenario), so
// that a test can hold udpstp's results to what OB-UDPST writes, with no
// property OB-UDPST does not write: README, "Strict JSON and
// --extensions". The schema is committed as SchemaPath; its test derives
// it again from the captures and fails when the two differ.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaPath is the committed schema, relative to the module root.
const SchemaPath = "testdata/schema/obudpst-9.0.0.json"

const schemaID = "https://github.com/udpstp/udpstp/" + SchemaPath

// shape is what the documents hold at one place: its JSON type and, for
// an object, its keys in order of first appearance and how often each
// appeared, for an array, the shape of all its elements.
type shape struct {
	typ   string // object, array, string, integer, number, boolean, null
	seen  int    // objects merged here
	keys  []string
	props map[string]*shape
	count map[string]int
	items *shape // nil: no element seen
}

// DeriveSchema is the schema of docs: every object holds only the keys
// some document has there (additionalProperties false), requires those
// every document has there; an array's elements have the merged shape of
// every element, and an array never seen with one has none (maxItems 0);
// a leaf is a string, a boolean, an integer, or a number where some
// document writes it with a fraction or an exponent.
func DeriveSchema(docs [][]byte) ([]byte, error) {
	var root *shape
	for i, d := range docs {
		dec := json.NewDecoder(bytes.NewReader(d))
		dec.UseNumber()
		v, err := readShape(dec)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if root, err = merge(root, v, "$"); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
	}
	if root == nil {
		return nil, fmt.Errorf("no documents")
	}
	top := root.schema()
	top = append(ordered{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", schemaID},
		{"title", "OB-UDPST 9.0.0 client JSON result"},
		{"description", fmt.Sprintf("Derived by internal/testkit/golden DeriveSchema from the %d client.json of testdata/obudpst: "+
			"only OB-UDPST's keys at every level, those every result has required.", len(docs))},
	}, top...)
	b, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// readShape reads one JSON value from dec as a shape of count 1.
func readShape(dec *json.Decoder) (*shape, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			s := &shape{typ: "object", seen: 1, props: map[string]*shape{}, count: map[string]int{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := readShape(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := s.props[k]; dup {
					return nil, fmt.Errorf("key %q twice", k)
				}
				s.keys = append(s.keys, k)
				s.props[k], s.count[k] = v, 1
			}
			_, err := dec.Token()
			return s, err
		case '[':
			s := &shape{typ: "array"}
			for dec.More() {
				v, err := readShape(dec)
				if err != nil {
					return nil, err
				}
				if s.items, err = merge(s.items, v, "[]"); err != nil {
					return nil, err
				}
			}
			_, err := dec.Token()
			return s, err
		}
	case string:
		return &shape{typ: "string"}, nil
	case bool:
		return &shape{typ: "boolean"}, nil
	case nil:
		return &shape{typ: "null"}, nil
	case json.Number:
		if strings.ContainsAny(string(t), ".eE") {
			return &shape{typ: "number"}, nil
		}
		return &shape{typ: "integer"}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// merge adds b's shape to a's (either may be nil).
func merge(a, b *shape, path string) (*shape, error) {
	switch {
	case a == nil:
		return b, nil
	case b == nil:
		return a, nil
	}
	if a.typ != b.typ {
		num := map[string]bool{"integer": true, "number": true}
		if num[a.typ] && num[b.typ] {
			return &shape{typ: "number"}, nil
		}
		return nil, fmt.Errorf("%s: %s and %s", path, a.typ, b.typ)
	}
	switch a.typ {
	case "object":
		prev := -1 // a key new to a goes after the last key both have
		for _, k := range b.keys {
			if i := indexOf(a.keys, k); i >= 0 {
				m, err := merge(a.props[k], b.props[k], path+"."+k)
				if err != nil {
					return nil, err
				}
				a.props[k] = m
				a.count[k] += b.count[k]
				prev = i
				continue
			}
			prev++
			a.keys = append(a.keys[:prev], append([]string{k}, a.keys[prev:]...)...)
			a.props[k], a.count[k] = b.props[k], b.count[k]
		}
		a.seen += b.seen
	case "array":
		m, err := merge(a.items, b.items, path+"[]")
		if err != nil {
			return nil, err
		}
		a.items = m
	}
	return a, nil
}

func indexOf(s []string, k string) int {
	for i, x := range s {
		if x == k {
			return i
		}
	}
	return -1
}

// ordered is a JSON object that keeps its keys' order.
type ordered []struct {
	k string
	v any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv.k)
		v, err := json.Marshal(kv.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (s *shape) schema() ordered {
	o := ordered{{"type", s.typ}}
	switch s.typ {
	case "object":
		props := ordered{}
		required := []string{}
		for _, k := range s.keys {
			props = append(props, struct {
				k string
				v any
			}{k, s.props[k].schema()})
			if s.count[k] == s.seen {
				required = append(required, k)
			}
		}
		o = append(o, ordered{{"properties", props}, {"required", required}, {"additionalProperties", false}}...)
	case "array":
		if s.items == nil {
			o = append(o, ordered{{"maxItems", 0}}...)
		} else {
			o = append(o, ordered{{"items", s.items.schema()}}...)
		}
	}
	return o
}

// CaptureDocs are the client.json of every scenario (the legacy captures
// of releases before 9.0.0 hold no JSON result), in Scenarios' order.
func CaptureDocs(t testing.TB) [][]byte {
	t.Helper()
	var docs [][]byte
	for _, sc := range Scenarios(t) {
		b, err := os.ReadFile(filepath.Join(sc.Path, "client.json"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	if len(docs) == 0 {
		t.Fatal("no client.json in the captures")
	}
	return docs
}

// Schema compiles the committed schema; its Validate takes a document
// decoded by jsonschema.UnmarshalJSON (see ValidateDoc).
func Schema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, SchemaPath))
	if err != nil {
		t.Fatalf("the schema: %v", err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("the schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(schemaID)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// ValidateDoc holds one JSON document to s.
func ValidateDoc(s *jsonschema.Schema, doc []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(v)
}
