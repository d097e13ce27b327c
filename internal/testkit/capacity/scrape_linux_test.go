package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// TestSeriesOf: the exposition the benchmarks scrape is read by
// Prometheus's parser, series keyed as serverSkipped asks for them; what
// is not the format is an error, not an empty map.
func TestSeriesOf(t *testing.T) {
	in := `# HELP udpstp_skipped_bursts_total Bursts skipped
# TYPE udpstp_skipped_bursts_total counter
udpstp_skipped_bursts_total{direction="downstream"} 3
udpstp_skipped_bursts_total{direction="upstream"} 0
# TYPE udpstp_running_connections gauge
udpstp_running_connections{direction="downstream"} 1
udpstp_build_info{version="v1",goos="linux"} 1
`
	m, err := seriesOf(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{
		`udpstp_skipped_bursts_total{direction="downstream"}`: 3,
		`udpstp_skipped_bursts_total{direction="upstream"}`:   0,
		`udpstp_running_connections{direction="downstream"}`:  1,
		`udpstp_build_info{goos="linux",version="v1"}`:        1,
	} {
		if got, ok := m[k]; !ok || got != want {
			t.Errorf("%s = %v (%v), want %v; all: %v", k, got, ok, want, m)
		}
	}
	if _, err := seriesOf(strings.NewReader("udpstp_x{ 1\n")); err == nil {
		t.Error("a broken exposition read without an error")
	}
}

// TestParseMax: the maximum of an OB-UDPST result, and an error for a
// result without one.
func TestParseMax(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(golden.Require(t), "us_default_v4", "client.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := parseMax(b); err != nil || v != 881.2 {
		t.Errorf("parseMax: %v, %v; want 881.2", v, err)
	}
	for _, in := range []string{`{"ErrorStatus":255}`, `not json`} {
		if _, err := parseMax([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}
