//go:build !small

package web

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

var circleXRE = regexp.MustCompile(`<circle class="dot s1" cx="([0-9.]+)"`)

// TestChartFitsFirstResults: a probe's first three results, all of the
// last hour, spread over the default chart's width (its time axis starts
// at the first result) instead of sitting in a few pixels at its right
// edge; an explicit 7d range still spans the 7 days.
func TestChartFitsFirstResults(t *testing.T) {
	st := newTestStore(t)
	now := time.Now().Truncate(time.Second)
	for _, ago := range []time.Duration{55 * time.Minute, 30 * time.Minute, 5 * time.Minute} {
		r := &store.Result{ID: newID(), Origin: store.OriginClient, Test: "home", Agent: "probe", Server: "198.18.0.1:25000",
			Start: now.Add(-ago), End: now.Add(-ago + 10*time.Second), Direction: "down", Status: store.StatusOK, MaxMbps: f64(100)}
		if err := st.Put(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(Handler(Config{Store: st, Title: "probe", Now: func() time.Time { return now }}))
	t.Cleanup(srv.Close)
	xs := func(path string) []float64 {
		_, body := get(t, srv.URL+path)
		i := strings.Index(body, `id="chart-capacity"`)
		if i < 0 {
			t.Fatalf("%s: no capacity chart", path)
		}
		var out []float64
		for _, m := range circleXRE.FindAllStringSubmatch(body[i:], 3) {
			x, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, x)
		}
		if len(out) != 3 {
			t.Fatalf("%s: %d points of the down line, want 3", path, len(out))
		}
		return out
	}
	width := float64(chartW - padL - padR)
	x := xs("/")
	if spread := x[2] - x[0]; spread < width/2 {
		t.Errorf("default range: the 3 results span %.1f of the plot's %.0f units (x %v), want at least half", spread, width, x)
	}
	if x[0] < padL || x[2] > chartW-padR {
		t.Errorf("default range: points outside the plot: x %v", x)
	}
	x = xs("/?range=7d")
	if spread := x[2] - x[0]; spread > width/100 {
		t.Errorf("range=7d: the 3 results of an hour span %.1f units of %.0f, want the 7 days' axis", spread, width)
	}
}
