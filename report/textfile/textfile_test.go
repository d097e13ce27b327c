package textfile

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/udpstp/udpstp/internal/testkit/golden"
)

// parseTextfile reads textfile content back as the text format's parser
// (the one node_exporter uses) reads it.
func parseTextfile(t *testing.T, b []byte) []*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("textfile does not parse: %v\n%s", err, b)
	}
	var mfs []*dto.MetricFamily
	for _, mf := range m {
		mfs = append(mfs, mf)
	}
	return mfs
}

// series are the samples of mfs by name and labels.
func series(mfs []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			ls := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			sort.Strings(ls)
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestResultTextfileGolden: OB-UDPST's own JSON results, successful and
// failed, become textfiles that parse, pass the linter, carry the labels,
// and hold the JSON's figures (Mbps as bytes per second, percentages as
// ratios).
func TestResultTextfileGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(golden.Require(t), "*", "client.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no OB-UDPST client results (%v)", err)
	}
	complete := 0
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(f))
		l := ResultLabels{Server: "speed.example.net", Direction: Upstream}
		out, err := ResultTextfile(doc, l)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		mfs := parseTextfile(t, out)
		problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: lint: %s: %s", name, p.Metric, p.Text)
		}
		got := series(mfs)
		var j struct {
			ErrorStatus int
			Output      *struct {
				Summary map[string]float64
				AtMax   map[string]any
			}
		}
		if err := json.Unmarshal(doc, &j); err != nil {
			t.Fatal(err)
		}
		k := func(name, more string) string {
			ls := []string{`direction="upstream"`, `server="speed.example.net"`}
			if more != "" {
				ls = append(ls, strings.Split(more, ",")...)
			}
			sort.Strings(ls)
			return name + "{" + strings.Join(ls, ",") + "}"
		}
		want := map[string]float64{
			k("udpstp_test_error_status", ``): float64(j.ErrorStatus),
			k("udpstp_test_success", ``):      b2f(j.ErrorStatus == 0),
		}
		if j.Output != nil && j.Output.AtMax != nil {
			complete++
			s, m := j.Output.Summary, j.Output.AtMax
			want[k("udpstp_test_capacity_bytes_per_second", `layer="L3/IP",result="summary"`)] = s["IPLayerCapacitySummary"] * 125000
			want[k("udpstp_test_capacity_bytes_per_second", `layer="L3/IP",result="max"`)] = m["MaxIPLayerCapacity"].(float64) * 125000
			want[k("udpstp_test_capacity_bytes_per_second", `layer="L2/Eth",result="max"`)] = m["MaxETHCapacityNoFCS"].(float64) * 125000
			want[k("udpstp_test_capacity_bytes_per_second", `layer="L1/Eth",result="max"`)] = m["MaxETHCapacityWithFCS"].(float64) * 125000
			want[k("udpstp_test_capacity_bytes_per_second", `layer="L1/Eth+VLAN",result="max"`)] = m["MaxETHCapacityWithFCSVLAN"].(float64) * 125000
			want[k("udpstp_test_loss_ratio", `result="summary"`)] = s["LossRatioSummary"]
			want[k("udpstp_test_loss_ratio", `result="max"`)] = m["LossRatioAtMax"].(float64)
			want[k("udpstp_test_delivered_ratio", `result="summary"`)] = s["DeliveredPercent"] / 100
			want[k("udpstp_test_rtt_variation_seconds", `result="summary",stat="max"`)] = s["RTTMax"]
			want[k("udpstp_test_pdv_seconds", `result="max",stat="avg"`)] = m["PDVAvg"].(float64)
			want[k("udpstp_test_min_rtt_seconds", `result="summary"`)] = s["MinRTTSummary"]
			want[k("udpstp_test_min_one_way_delay_seconds", `result="max"`)] = m["MinOnewayDelayAtMax"].(float64)
			want[k("udpstp_test_lost_datagrams", `result="summary"`)] = s["LossCount"]
			want[k("udpstp_test_sub_intervals", `result="max"`)] = m["Intervals"].(float64)
		} else if len(got) != 2 {
			t.Errorf("%s: a result without Output has %d series, want the two of the status: %v", name, len(got), got)
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s: %s = %v (present %v), want %v", name, k, g, ok, v)
			}
		}
	}
	if complete == 0 {
		t.Error("no complete result among the OB-UDPST captures")
	}
}

// TestResultTextfileRefuses: a name the collector would not read, and a
// document that is not a result, are errors.
func TestResultTextfileRefuses(t *testing.T) {
	for _, name := range []string{"result.txt", "result.prom.tmp", ".prom", "result", "dir/.prom"} {
		err := CheckTextfileName(name)
		if err == nil || !strings.Contains(err.Error(), ".prom") {
			t.Errorf("%s: %v, want a refusal naming .prom", name, err)
		}
	}
	if err := CheckTextfileName("dir/ok.prom"); err != nil {
		t.Errorf("ok.prom: %v", err)
	}
	for _, doc := range []string{``, `[]`, `{"Output":{}}`} {
		if _, err := ResultTextfile([]byte(doc), ResultLabels{}); err == nil {
			t.Errorf("%q: no error", doc)
		}
	}
	b, err := ResultTextfile([]byte(`{"ErrorStatus":255,"ErrorMessage":"x"}`), ResultLabels{Server: "s", Direction: Downstream})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `udpstp_test_success{direction="downstream",server="s"} 0`) {
		t.Errorf("failed run's textfile:\n%s", b)
	}
}
