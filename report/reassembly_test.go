package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// The host's reassembly failures are in the extension and in the text
// after the Maximum when there were some, and nowhere when there were
// none.
func TestReassemblyFailures(t *testing.T) {
	run := func(f Format, n int64) string {
		return threeSubIntervals(t, f, false, func(c *Collector) { c.SetReassemblyFailures(n) })
	}
	var doc struct {
		Udpstp *struct{ ReassemblyFailures *int64 } `json:"udpstp"`
	}
	if err := json.Unmarshal([]byte(run(FormatJSON, 2962)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Udpstp == nil || doc.Udpstp.ReassemblyFailures == nil || *doc.Udpstp.ReassemblyFailures != 2962 {
		t.Errorf("with 2962 failures the extension is %+v, want ReassemblyFailures 2962", doc.Udpstp)
	}
	doc.Udpstp = nil
	if err := json.Unmarshal([]byte(run(FormatJSON, 0)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Udpstp != nil && doc.Udpstp.ReassemblyFailures != nil {
		t.Errorf("without failures the extension has ReassemblyFailures %d", *doc.Udpstp.ReassemblyFailures)
	}
	text := run(FormatText, 2962)
	i, j := strings.Index(text, "Maximum"), strings.Index(text, "failed to reassemble 2962 IP fragments")
	if i < 0 || j < i {
		t.Errorf("the text does not say the failures after the Maximum:\n%s", text)
	}
	if s := run(FormatText, 0); strings.Contains(s, "reassemble") {
		t.Errorf("the text names failures there were none of:\n%s", s)
	}
}
