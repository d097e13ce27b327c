package family

import (
	"bytes"
	"math"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestRenderAsTheLibrary: the text the textfile is written in reads back,
// and the Prometheus library writes the families it reads back to the
// same bytes: order, escapes and numbers as the library's own.
func TestRenderAsTheLibrary(t *testing.T) {
	b := &Family{Name: "b_gauge", Help: "two\nlines and a \\", Type: Gauge, Labels: []string{"z", "a"}}
	a := &Family{Name: "a_gauge", Help: "plain", Type: Gauge}
	c := &Family{Name: "c_gauge", Help: "odd values", Type: Gauge, Labels: []string{"k"}}
	d := &Family{Name: "d_total", Help: "a counter", Type: Counter}
	samples := []Sample{
		{Family: b, Values: []string{"1", "x\"y\\z\nw"}, Value: 1},
		{Family: b, Values: []string{"0", "x\"y\\z\nw"}, Value: 0.5},
		{Family: a, Value: 12345678.9},
		{Family: c, Values: []string{"inf"}, Value: math.Inf(1)},
		{Family: c, Values: []string{"big"}, Value: 1e21},
		{Family: c, Values: []string{"neg"}, Value: -0.000125},
		{Family: d, Value: 7},
	}
	got := WriteText(samples)
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(bytes.NewReader(got))
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, got)
	}
	var mfs []*dto.MetricFamily
	for _, mf := range m {
		mfs = append(mfs, mf)
	}
	sort.Slice(mfs, func(i, j int) bool { return mfs[i].GetName() < mfs[j].GetName() })
	var want bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("rendered:\n%s\nthe library writes:\n%s", got, want.Bytes())
	}
}

// TestCheck: one name declared twice alike passes; with other help,
// another type or other labels it is an error naming it.
func TestCheck(t *testing.T) {
	f := &Family{Name: "udpstp_x", Help: "h", Type: Gauge, Labels: []string{"a"}}
	same := *f
	if err := Check([]*Family{f, &same, f}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []Family{
		{Name: "udpstp_x", Help: "other", Type: Gauge, Labels: []string{"a"}},
		{Name: "udpstp_x", Help: "h", Type: Counter, Labels: []string{"a"}},
		{Name: "udpstp_x", Help: "h", Type: Gauge, Labels: []string{"a", "b"}},
	} {
		if err := Check([]*Family{f, &g}); err == nil || !strings.Contains(err.Error(), "udpstp_x") {
			t.Errorf("%+v: %v, want an error naming udpstp_x", g, err)
		}
	}
}
