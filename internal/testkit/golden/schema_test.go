package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateSchema = flag.Bool("update-schema", false, "write "+SchemaPath+" from the captures")

// TestGoldenSchemaDerived: the committed schema is what DeriveSchema makes
// of OB-UDPST's results today (go test -run TestGoldenSchemaDerived
// -update-schema ./internal/testkit/golden writes it after a capture changes).
func TestGoldenSchemaDerived(t *testing.T) {
	got, err := DeriveSchema(CaptureDocs(t))
	if err != nil {
		t.Fatal(err)
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, SchemaPath)
	if *updateSchema {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the captures give (-update-schema writes it); derived:\n%s", SchemaPath, got)
	}
}

// TestGoldenSchemaHoldsCaptures: every OB-UDPST result passes the schema,
// and the schema refuses what OB-UDPST never writes: udpstp's "udpstp"
// key, an extra key inside Input, a missing required key, a string for a
// number, an element in an array OB-UDPST leaves empty.
func TestGoldenSchemaHoldsCaptures(t *testing.T) {
	s := Schema(t)
	docs := CaptureDocs(t)
	for i, d := range docs {
		if err := ValidateDoc(s, d); err != nil {
			t.Errorf("capture %d fails its own schema: %v", i, err)
		}
	}
	var full map[string]any // a complete result, with Input and Output
	for _, d := range docs {
		var m map[string]any
		if err := json.Unmarshal(d, &m); err != nil {
			t.Fatal(err)
		}
		if out, ok := m["Output"].(map[string]any); ok && out["Status"] == "Complete" {
			full = m
			break
		}
	}
	if full == nil {
		t.Fatal("no complete result among the captures")
	}
	for name, edit := range map[string]func(m map[string]any){
		"udpstp key":          func(m map[string]any) { m["udpstp"] = map[string]any{"SkippedBursts": 1} },
		"extra in Input":      func(m map[string]any) { m["Input"].(map[string]any)["Extra"] = 1 },
		"ErrorStatus missing": func(m map[string]any) { delete(m, "ErrorStatus") },
		"string for a number": func(m map[string]any) { m["ErrorStatus"] = "0" },
		"a ModalResult":       func(m map[string]any) { m["Output"].(map[string]any)["ModalResult"] = []any{map[string]any{}} },
		"extra in a Sub-Interval": func(m map[string]any) {
			ir := m["Output"].(map[string]any)["IncrementalResult"].([]any)
			ir[0].(map[string]any)["SkippedBursts"] = 0
		},
	} {
		var m map[string]any
		b, _ := json.Marshal(full)
		json.Unmarshal(b, &m)
		edit(m)
		bad, _ := json.Marshal(m)
		if err := ValidateDoc(s, bad); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
	// The same document, unedited, passes after the round trip.
	b, _ := json.Marshal(full)
	if err := ValidateDoc(s, b); err != nil {
		t.Errorf("the unedited document: %v", err)
	}
}
