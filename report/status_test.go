package report

import (
	"bytes"
	"testing"
)

func TestErrorStatus(t *testing.T) {
	type step func(c *Collector)
	warn := func(code int, m string) step { return func(c *Collector) { c.Warning(code, m) } }
	fail := func(code int, m string) step { return func(c *Collector) { c.Error(code, m) } }
	alert := func(m string) step { return func(c *Collector) { c.Alert(m) } }
	end := func(normal bool) step { return func(c *Collector) { c.ConnEnded(normal) } }
	minc := func(c *Collector) { c.CheckMinConnections() }
	cases := []struct {
		name       string
		steps      []step
		status     int
		msg, msg2  string
		textOutput string
	}{
		{"initial", nil, 255, "", "", ""},
		{"normal end: 255 becomes 0", []step{end(true)}, 0, "", "", ""},
		{"warning then normal end keeps the warning",
			[]step{warn(4, "LOCAL WARNING: Incoming traffic has completely stopped [Server 127.0.0.1:24601]"), end(true)},
			4, "LOCAL WARNING: Incoming traffic has completely stopped [Server 127.0.0.1:24601]", "",
			"LOCAL WARNING: Incoming traffic has completely stopped [Server 127.0.0.1:24601]\n"},
		{"last warning wins", []step{warn(2, "a"), warn(6, "b"), end(true)}, 6, "b", "a", "a\nb\n"},
		{"setup error kept when 200 arrives",
			[]step{fail(110, "ERROR: Required max bandwidth exceeds available capacity on server 127.0.0.1:24601"), end(false), minc},
			110, "ERROR: Minimum required connections (1) unavailable",
			"ERROR: Required max bandwidth exceeds available capacity on server 127.0.0.1:24601",
			"ERROR: Required max bandwidth exceeds available capacity on server 127.0.0.1:24601\nERROR: Minimum required connections (1) unavailable\n"},
		{"200 replaces a timeout warning",
			[]step{warn(1, "WARNING: Timeout awaiting response from server 127.0.0.1:24999"), end(false), minc},
			200, "ERROR: Minimum required connections (1) unavailable", "WARNING: Timeout awaiting response from server 127.0.0.1:24999", ""},
		{"200 replaces success", []step{end(true), end(false), minc}, 200, "ERROR: Minimum required connections (1) unavailable", "", ""},
		{"255 kept when 200 arrives", []step{end(false), minc}, 255, "ERROR: Minimum required connections (1) unavailable", "", ""},
		{"min connections checked once", []step{end(false), minc, minc}, 255, "ERROR: Minimum required connections (1) unavailable", "", ""},
		{"alert records the message, not the status", []step{alert("ALERT: Received invalid setup response (1,0x2:0x3,0x4) [Server 127.0.0.1:24601]"), end(true)},
			0, "ALERT: Received invalid setup response (1,0x2:0x3,0x4) [Server 127.0.0.1:24601]", "", ""},
		{"error after a warning overwrites it, normal end clears it", []step{warn(3, "w"), fail(75, "e"), end(true)}, 0, "e", "w", ""},
		{"quotes and newlines", []step{fail(51, "FOPEN ERROR: \"keys\" missing\nsecond line")}, 51, "FOPEN ERROR: 'keys' missing", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			c := New(&out, Options{Connections: 1, MinConnections: 1})
			for _, s := range tc.steps {
				s(c)
			}
			if c.ErrorStatus() != tc.status || c.msg != tc.msg || c.msg2 != tc.msg2 {
				t.Errorf("got %d %q %q, want %d %q %q", c.ErrorStatus(), c.msg, c.msg2, tc.status, tc.msg, tc.msg2)
			}
			if tc.textOutput != "" && out.String() != tc.textOutput {
				t.Errorf("text output %q, want %q", out.String(), tc.textOutput)
			}
		})
	}
}

// TestAlertCap: a flood of invalid control responses shows MaxAlerts
// lines and one that says the rest are not shown; all are counted.
func TestAlertCap(t *testing.T) {
	var out bytes.Buffer
	c := New(&out, Options{Connections: 1, MinConnections: 1})
	for i := 0; i < 50000; i++ {
		c.Alert("ALERT: Received invalid setup response (1,0x0000:0x0000,0x0000) [Server 127.0.0.1:24601]")
	}
	lines := bytes.Count(out.Bytes(), []byte("\n"))
	if lines != MaxAlerts+1 || !bytes.Contains(out.Bytes(), []byte("no more are shown")) || c.Alerts() != 50000 {
		t.Errorf("%d lines, %d counted:\n%s", lines, c.Alerts(), out.String())
	}
	if c.ErrorStatus() != StatusGeneral {
		t.Errorf("status %d: alerts change no status", c.ErrorStatus())
	}
}

func TestMessagesNotPrintedInJSON(t *testing.T) {
	var out bytes.Buffer
	c := New(&out, Options{Format: FormatJSON, Connections: 1, MinConnections: 1})
	c.Warning(1, "WARNING: Timeout awaiting response from server 127.0.0.1:24999")
	c.ConnEnded(false)
	c.CheckMinConnections()
	c.Finish()
	want := `{"IPLayerMaxConnections":24,"IPLayerMaxIncrementalResult":36000,"IPLayerCapSupported":{"SoftwareVersion":"` + softwareVersion() + `","ControlProtocolVersion":20,"Metrics":"IPLR,Sampled_RTT,IPDV,IPRR,RIPR"},"ErrorStatus":200,"ErrorMessage":"ERROR: Minimum required connections (1) unavailable","ErrorMessage2":"WARNING: Timeout awaiting response from server 127.0.0.1:24999"}` + "\n"
	if out.String() != want {
		t.Errorf("got  %s\nwant %s", out.String(), want)
	}
}

func TestParseFormat(t *testing.T) {
	for s, want := range map[string]Format{"": FormatText, "text": FormatText, "json": FormatJSON, "JSONB": FormatJSONBrief, "JsonF": FormatJSONFormatted} {
		if f, err := ParseFormat(s); err != nil || f != want {
			t.Errorf("ParseFormat(%q) = %v, %v", s, f, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil || err.Error() != "'xml' is not a valid output format" {
		t.Errorf("ParseFormat(xml) error %v", err)
	}
}
