//go:build !small

package web

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

var (
	enrolledRowRE = regexp.MustCompile(`(?s)<tr data-probe="([^"]*)">(.*?)</tr>`)
	stateRE       = regexp.MustCompile(`(?s)<td class="state">(.*?)</td>`)
	tagRE         = regexp.MustCompile(`<[^>]*>`)
)

// enrolledRows is the page's enrolled probes without results in its
// range: name -> what its state cell says, and their order.
func enrolledRows(t *testing.T, body string) (map[string]string, []string) {
	t.Helper()
	states := map[string]string{}
	var order []string
	for _, m := range enrolledRowRE.FindAllStringSubmatch(body, -1) {
		st := stateRE.FindStringSubmatch(m[2])
		if st == nil {
			t.Fatalf("%s: no state cell in %q", m[1], m[2])
		}
		states[m[1]] = tagRE.ReplaceAllString(st[1], "")
		order = append(order, m[1])
	}
	return states, order
}

// TestFleetEnrolled: over a store that keeps enrolled probes (a
// collector's), the fleet page lists those without results in its range,
// the most recently heard from first: "silent since" their last result,
// "never uploaded", and "revoked" when; a revoked probe with results in
// the range is marked in the probes' table; a longer range moves a silent
// probe into that table; an agent's filter keeps that probe only; past
// silentShown the rest are counted. A store without enrolled probes, or
// one that keeps none, gives the page as before.
func TestFleetEnrolled(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	p := st.(store.Probes)
	now := time.Now().Truncate(time.Second)
	day := 24 * time.Hour
	put := func(agent string, ago time.Duration) {
		t.Helper()
		r := &store.Result{ID: newID(), Origin: store.OriginClient, Test: "t", Agent: agent, Server: "198.18.0.1:25000",
			Start: now.Add(-ago), Direction: "down", Status: store.StatusOK, MaxMbps: f64(100)}
		if err := st.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	serial := 0
	enrol := func(name string, ago time.Duration) {
		t.Helper()
		serial++
		if err := p.Enrol(ctx, name, fmt.Sprintf("%02x", serial), now.Add(-ago)); err != nil {
			t.Fatal(err)
		}
	}
	revoke := func(name string, ago time.Duration) {
		t.Helper()
		if n, err := p.Revoke(ctx, name, now.Add(-ago)); err != nil || n != 1 {
			t.Fatalf("Revoke(%s): %d, %v", name, n, err)
		}
	}
	for _, n := range []string{"active", "silent", "never", "revoked-active", "revoked-silent"} {
		enrol(n, 60*day)
	}
	put("active", time.Hour)
	put("silent", 10*day)
	put("revoked-active", 2*day)
	revoke("revoked-active", day)
	put("revoked-silent", 20*day)
	revoke("revoked-silent", 15*day)
	put("stranger", time.Hour) // uploaded, never enrolled (another agent of the store)

	srv := httptest.NewServer(Handler(Config{Store: st, Title: "fleet", Now: func() time.Time { return now }}))
	t.Cleanup(srv.Close)
	when := func(ago time.Duration) string { return now.Add(-ago).Local().Format("2006-01-02 15:04") }

	_, body := get(t, srv.URL+"/fleet?range=7d")
	states, order := enrolledRows(t, body)
	if want := []string{"silent", "revoked-silent", "never"}; !slices.Equal(order, want) {
		t.Fatalf("7d: enrolled probes without results %v, want %v", order, want)
	}
	for name, want := range map[string]string{
		"silent":         "silent since " + when(10*day),
		"revoked-silent": "silent since " + when(20*day) + "; revoked " + when(15*day),
		"never":          "never uploaded",
	} {
		if states[name] != want {
			t.Errorf("7d: %s says %q, want %q", name, states[name], want)
		}
	}
	var active []string
	for _, m := range probeRowRE.FindAllStringSubmatch(body, -1) {
		active = append(active, m[1])
		revoked := strings.Contains(m[2], `<span class="revoked">revoked `+when(day)+`</span>`)
		if revoked != (m[1] == "revoked-active") || strings.Contains(m[2], "revoked") != revoked {
			t.Errorf("7d: probe %s marked revoked: %v", m[1], revoked)
		}
	}
	if want := []string{"active", "stranger", "revoked-active"}; !slices.Equal(active, want) {
		t.Errorf("7d: the probes' table %v, want %v", active, want)
	}

	// 30 days: silent has results in the range; revoked-silent is now in
	// the probes' table, marked.
	_, body = get(t, srv.URL+"/fleet?range=30d")
	if _, order := enrolledRows(t, body); !slices.Equal(order, []string{"never"}) {
		t.Errorf("30d: enrolled probes without results %v, want [never]", order)
	}
	if !strings.Contains(body, `<tr data-agent="revoked-silent">`) ||
		!strings.Contains(body, `<span class="revoked">revoked `+when(15*day)+`</span>`) {
		t.Errorf("30d: revoked-silent is not in the probes' table, marked revoked")
	}

	// An agent's filter: that probe alone.
	_, body = get(t, srv.URL+"/fleet?range=7d&agent=silent")
	if _, order := enrolledRows(t, body); !slices.Equal(order, []string{"silent"}) {
		t.Errorf("agent=silent: enrolled probes without results %v", order)
	}
	_, body = get(t, srv.URL+"/fleet?range=7d&agent=active")
	if _, order := enrolledRows(t, body); len(order) != 0 || !strings.Contains(body, "1 enrolled; none without results in this range.") {
		t.Errorf("agent=active: enrolled probes without results %v, or no note that there are none", order)
	}

	// Past silentShown: the rest counted, the page bounded.
	for i := range silentShown {
		enrol(fmt.Sprintf("later-%03d", i), day)
	}
	_, body = get(t, srv.URL+"/fleet?range=7d")
	if _, order := enrolledRows(t, body); len(order) != silentShown || !strings.Contains(body, "And 3 more:") {
		t.Errorf("%d silent probes: %d shown, and the note of the rest: %v", silentShown+3, len(order), strings.Contains(body, "more:"))
	}

	// The agent's page: a store that keeps no probes (wrapped: only
	// store.Store's methods), or keeps none enrolled, is unchanged.
	for name, s := range map[string]store.Store{"wrapped": &countingStore{Store: st}, "empty": newTestStore(t)} {
		ws := httptest.NewServer(Handler(Config{Store: s, Title: "fleet", Now: func() time.Time { return now }}))
		_, body := get(t, ws.URL+"/fleet?range=7d")
		ws.Close()
		if strings.Contains(body, "Enrolled probes") || strings.Contains(body, " enrolled;") || strings.Contains(body, `class="revoked"`) {
			t.Errorf("%s store: the page speaks of enrolled probes", name)
		}
	}
}
