//go:build !small

package web

import (
	"context"
	"fmt"
	"html"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/udpstp/udpstp/store"
)

// countingStore counts the queries a page makes.
type countingStore struct {
	store.Store
	lists, gets atomic.Int64
}

func (c *countingStore) List(ctx context.Context, f store.Filter) ([]store.Result, error) {
	c.lists.Add(1)
	return c.Store.List(ctx, f)
}

func (c *countingStore) Get(ctx context.Context, id string) (*store.Result, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, id)
}

var (
	probeRowRE = regexp.MustCompile(`(?s)<tr data-agent="([^"]*)">(.*?)</tr>`)
	lastRE     = regexp.MustCompile(`(?s)<ol class="last">(.*?)</ol>`)
	slotRE     = regexp.MustCompile(`<li data-id="([^"]*)">[^<]*: ([^<]*)</li>`)
	liIDRE     = regexp.MustCompile(`<li data-id="([^"]*)">`)
	olderRE    = regexp.MustCompile(`class="older" href="/fleet\?([^"]*)"`)
)

// TestFleetProbes: the fleet page lists a page of probes, the most
// recently active first, each with its last results and its missed
// schedules (when and why) as the store holds them, the next probes a
// link further; and it reads them in a bounded number of queries, not one
// per probe.
func TestFleetProbes(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: newTestStore(t)}
	now := time.Now().Truncate(time.Second)
	const probes, each = 2*probesShown + 7, 8
	// Probe p's results: each of them, the third a missed slot on even
	// probes; probe p an hour older than p-1, its i-th result i minutes
	// older than its first.
	want := map[string][]string{}   // probe -> its last results' IDs, newest first
	missed := map[string][]string{} // probe -> its missed slots' IDs
	for p := range probes {
		agent := fmt.Sprintf("probe-%03d", p)
		for i := range each {
			r := &store.Result{ID: newID(), Origin: store.OriginClient, Test: "t", Agent: agent, Server: "198.18.0.1:25000",
				Start: now.Add(-time.Duration(p)*time.Hour - time.Duration(i)*time.Minute), Direction: "down", Status: store.StatusOK, MaxMbps: f64(float64(p + i))}
			if i == 2 && p%2 == 0 {
				r.Status, r.MaxMbps, r.Warning = store.StatusMissed, nil, fmt.Sprintf("every server refused (%d)", p)
				missed[agent] = append(missed[agent], r.ID)
			}
			if err := st.Put(ctx, r); err != nil {
				t.Fatal(err)
			}
			if len(want[agent]) < probeRecent {
				want[agent] = append(want[agent], r.ID)
			}
		}
	}
	srv := httptest.NewServer(Handler(Config{Store: st, Title: "fleet", Now: func() time.Time { return now }}))
	t.Cleanup(srv.Close)

	var seen []string
	page := "range=30d"
	for pages := 0; page != ""; pages++ {
		if pages > probes/probesShown {
			t.Fatalf("more pages than %d probes make", probes)
		}
		st.lists.Store(0)
		_, body := get(t, srv.URL+"/fleet?"+page)
		if n := st.lists.Load(); n > 2 {
			t.Errorf("/fleet?%s: %d List queries for %d probes, want at most 2", page, n, probesShown)
		}
		rows := probeRowRE.FindAllStringSubmatch(body, -1)
		if len(rows) == 0 || len(rows) > probesShown {
			t.Fatalf("/fleet?%s: %d probes on a page", page, len(rows))
		}
		for _, row := range rows {
			agent, cells := row[1], row[2]
			seen = append(seen, agent)
			last := lastRE.FindStringSubmatch(cells)
			if last == nil {
				t.Fatalf("%s: no last results", agent)
			}
			var got []string
			for _, m := range liIDRE.FindAllStringSubmatch(last[1], -1) {
				got = append(got, m[1])
			}
			if !slices.Equal(got, want[agent]) {
				t.Errorf("%s's last results %v, want %v", agent, got, want[agent])
			}
			var slots []string
			for _, m := range slotRE.FindAllStringSubmatch(cells, -1) {
				slots = append(slots, m[1])
				if !strings.Contains(m[2], "every server refused") {
					t.Errorf("%s: a missed slot says %q", agent, m[2])
				}
			}
			if !slices.Equal(slots, missed[agent]) {
				t.Errorf("%s's missed schedules %v, want %v", agent, slots, missed[agent])
			}
		}
		page = ""
		if m := olderRE.FindStringSubmatch(body); m != nil {
			page = html.UnescapeString(m[1])
		}
	}
	// Every probe once, the most recently active (probe-000) first.
	var all []string
	for p := range probes {
		all = append(all, fmt.Sprintf("probe-%03d", p))
	}
	if !slices.Equal(seen, all) {
		t.Errorf("the probes over the pages: %v, want %v", seen, all)
	}
}

var rangeLinkRE = regexp.MustCompile(`<a href="\?([^"]*)">1y</a>`)

// TestRangeLinks: a range link keeps the page's filter and sets its
// range (its query's & and = are not escaped into one parameter).
func TestRangeLinks(t *testing.T) {
	f := newFixture(t, 12)
	for _, path := range []string{"/", "/fleet"} {
		_, body := get(t, f.srv.URL+path+"?range=30d&agent=probe-rack")
		m := rangeLinkRE.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("%s: no 1y link", path)
		}
		_, body = get(t, f.srv.URL+path+"?"+html.UnescapeString(m[1]))
		if !strings.Contains(body, "<strong>1y</strong>") {
			t.Errorf("%s: the 1y link (?%s) did not select 1y", path, m[1])
		}
		if strings.Contains(body, `data-agent="probe-kitchen"`) {
			t.Errorf("%s: the 1y link (?%s) lost the probe filter", path, m[1])
		}
	}
}

// TestFleetServersAndProbes: a server's archive records (Origin server,
// its name as their Agent) are under servers, not probes, and the
// probes' records of that server (host:port) and its archive's (its
// name) are one server's row; its link shows all of them.
func TestFleetServersAndProbes(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	now := time.Now().Truncate(time.Second)
	put := func(i int, origin store.Origin, agent, server string) {
		r := &store.Result{ID: newID(), Origin: origin, Test: "t", Agent: agent, Server: server,
			Start: now.Add(-time.Duration(i+1) * time.Minute), Direction: "down", Status: store.StatusOK, MaxMbps: f64(100)}
		if origin == store.OriginServer {
			r.Test, r.Client = "", "client-1"
		}
		if err := st.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	put(0, store.OriginClient, "probe-kitchen", "srv1.example:24601")
	put(1, store.OriginServer, "srv1.example", "srv1.example")
	put(2, store.OriginClient, "probe-rack", "srv1.example:24601")
	put(3, store.OriginServer, "srv1.example", "srv1.example")
	srv := httptest.NewServer(Handler(Config{Store: st, Title: "fleet", Now: func() time.Time { return now }}))
	t.Cleanup(srv.Close)

	_, body := get(t, srv.URL+"/fleet")
	var probes []string
	for _, m := range probeRowRE.FindAllStringSubmatch(body, -1) {
		probes = append(probes, m[1])
	}
	if want := []string{"probe-kitchen", "probe-rack"}; !slices.Equal(probes, want) {
		t.Errorf("probes %q, want %q (a server's archive is no probe)", probes, want)
	}
	servers := regexp.MustCompile(`<tr data-server="([^"]*)">`).FindAllStringSubmatch(body, -1)
	if len(servers) != 1 || servers[0][1] != "srv1.example" {
		t.Fatalf("servers %q, want the one srv1.example", servers)
	}
	_, body = get(t, srv.URL+"/?server=srv1.example")
	if n := strings.Count(body, `<tr data-id="`); n != 4 {
		t.Errorf("the server's link shows %d results, want its 4 (the probes' and the archive's)", n)
	}
}
