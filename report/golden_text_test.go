package report

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// resultLine matches the client.txt lines the Collector produces: header,
// Sub-Interval lines of the connection and of the aggregate, Summary,
// Minimum (final form) and Maximum lines.
var resultLine = regexp.MustCompile(`^(\[\d\])?((Up|Down)stream (Test Int|Summary|Sum\[|Minimum .*Active|Maximum|Max\[)|Sub-Interval|  ID: )`)

// rttAvg is the RTTVar average, which a downstream capture cannot give.
var rttAvg = regexp.MustCompile(`RTTVar\(ms\): (\d+)/\d+/(\d+)`)

func resultLines(text string, maskRTTAvg bool) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if !resultLine.MatchString(l) {
			continue
		}
		if maskRTTAvg {
			l = rttAvg.ReplaceAllString(l, "RTTVar(ms): $1/*/$2")
		}
		out = append(out, l)
	}
	return out
}

// goldenInfo is the TestInfo of a scenario: the JSON run's Input (same
// options), with the multi-connection ID of the capture run's Setup Request.
func goldenInfo(t *testing.T, sc golden.Scenario, pdus []golden.PDU) TestInfo {
	t.Helper()
	_, doc := readDoc(t, filepath.Join(sc.Path, "client.json"))
	info := infoFromInput(t, fObj(t, doc, "Input"), fObj(t, doc, "Output"))
	for _, p := range pdus {
		if p.Dir == "c2s" && p.ID == "ace1" {
			info.MCIdent = int(binary.BigEndian.Uint16(p.Bytes[6:]))
			break
		}
	}
	return info
}

// TestGoldenTextLines replays the Status PDUs of every capture run (the run
// whose output is client.txt) through the Collector in verbose text mode
// and compares the header, every "[1]" and "[0]" Sub-Interval line, the
// Summary, Minimum and Maximum lines with OB-UDPST's. Upstream the client's
// lines come only from the server's Status PDUs, so everything must match;
// downstream the RTTVar average is masked (see statusResults).
func TestGoldenTextLines(t *testing.T) {
	for _, sc := range golden.Scenarios(t) {
		pdus := sc.PDUs(t, "pdus.jsonl")
		txt, err := os.ReadFile(filepath.Join(sc.Path, "client.txt"))
		if pdus == nil || err != nil || !bytes.Contains(txt, []byte("Sub-Interval[1]")) {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			info := goldenInfo(t, sc, pdus)
			var out bytes.Buffer
			c := New(&out, Options{Verbose: true, LossRatio: strings.Contains(string(txt), "LossRatio:"),
				Connections: 1, MinConnections: 1, Now: fixedClock(1796009000e9)})
			c.Activate(info)
			c.WriteHeader(0)
			for _, r := range statusResults(t, pdus, info.Upstream, info.CEThresh > 0) {
				c.Add(0, r)
			}
			c.ConnEnded(true)
			if err := c.Finish(); err != nil {
				t.Fatal(err)
			}
			mask := !info.Upstream
			want, got := resultLines(string(txt), mask), resultLines(out.String(), mask)
			if len(want) < 8 {
				t.Fatalf("only %d result lines in client.txt", len(want))
			}
			for i := range max(len(want), len(got)) {
				var w, g string
				if i < len(want) {
					w = want[i]
				}
				if i < len(got) {
					g = got[i]
				}
				if w != g {
					t.Errorf("line %d:\n got %q\nwant %q", i, g, w)
				}
			}
			t.Logf("%d lines compared", len(want))
			if c.ErrorStatus() != 0 {
				t.Errorf("ErrorStatus %d, want 0", c.ErrorStatus())
			}
		})
	}
}
