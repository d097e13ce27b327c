package report

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// TestGoldenSchemaDocuments holds the documents the Collector writes with
// default options to the JSON Schema derived from OB-UDPST's results
// (internal/testkit/golden): for every capture with results, a fake run of its
// shape (upstream and downstream, its connections, jumbo or not, fixed or
// searched rate), the two halves of a Bidirectional pair and the runs of a
// Repeat; and the failed runs, a setup error of each ErrorStatus. The same
// run with Options.Extensions has our key and the schema refuses it, so
// the test sees the difference.
func TestGoldenSchemaDocuments(t *testing.T) {
	s := golden.Schema(t)
	valid := func(t *testing.T, what string, doc []byte) {
		t.Helper()
		if err := golden.ValidateDoc(s, doc); err != nil {
			t.Errorf("%s: %v\n%s", what, err, doc)
		}
	}
	refused := 0
	forEachActivated(t, func(t *testing.T, doc *jobj, info TestInfo, n int) {
		for _, upstream := range []bool{false, true} {
			info.Upstream = upstream
			c := fakeCollector(t, io.Discard, info, n)
			for _, f := range []Format{FormatJSON, FormatJSONFormatted} {
				valid(t, "default", c.Document(f))
			}
			c.opt.Extensions = true
			ext := c.Document(FormatJSON)
			v, err := parseOrdered(ext)
			if err != nil {
				t.Fatal(err)
			}
			if _, has := v.(*jobj).lookup(ExtensionKey); has {
				if golden.ValidateDoc(s, ext) == nil {
					t.Errorf("upstream %v: the document with %q passes the schema", upstream, ExtensionKey)
				}
				refused++
			}
		}
		up, down := info, info
		up.Upstream, down.Upstream = true, false
		b := &Bidirectional{Up: fakeCollector(t, io.Discard, up, n), Down: fakeCollector(t, io.Discard, down, n)}
		rep := NewRepeat(2, 0)
		rep.Add(fakeCollector(t, io.Discard, info, n))
		rep.Add(b)
		pair := rawFields(t, b.Document(FormatJSON))
		valid(t, "bidirectional's upstream half", pair["Upstream"])
		valid(t, "bidirectional's downstream half", pair["Downstream"])
		var runs []json.RawMessage
		if err := json.Unmarshal(rawFields(t, rep.Document(FormatJSON))["Runs"], &runs); err != nil || len(runs) != 2 {
			t.Fatalf("repeat's runs: %v, %d", err, len(runs))
		}
		valid(t, "repeat's first run", runs[0])
		valid(t, "repeat's second run, downstream", rawFields(t, runs[1])["Downstream"])
	})
	if refused == 0 {
		t.Error("no run had our key with Extensions: the refusal was never tried")
	}
	for _, code := range []int{3, StatusMinConns, 110, StatusInit} {
		valid(t, "failed run", failedCollector(t, code).Document(FormatJSONFormatted))
	}
}

// rawFields are the top-level members of a JSON object, undecoded.
func rawFields(t *testing.T, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
