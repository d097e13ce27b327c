//go:build !small

package web

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/udpstp/udpstp/store"
)

// ranges are the overview's choices of time range, shortest first; the
// first of them in defaultRange is the default.
var ranges = []struct {
	Name string
	D    time.Duration
}{
	{"24h", 24 * time.Hour},
	{"7d", 7 * 24 * time.Hour},
	{"30d", 30 * 24 * time.Hour},
	{"1y", 365 * 24 * time.Hour},
}

const defaultRange = "7d"

// recentRows is how many of the latest results the overview lists.
const recentRows = 20

// view is what a request asks the overview for: a range and filters.
type view struct {
	Range      string
	Since, Now time.Time
	// Fit: no range was asked for, so the charts' time axis starts at the
	// first result in the default range (see fitSpan), not the range's
	// start: a probe's first results are spread over the chart, not
	// squeezed into its right edge (docs/web.md, "Overview").
	Fit         bool
	Test, Agent string
	Server      string
}

// viewOf reads a view from the query; an unknown range is the default.
func (s *server) viewOf(q url.Values) view {
	v := view{Range: defaultRange, Now: s.now(), Test: q.Get("test"), Agent: q.Get("agent"), Server: q.Get("server")}
	d := 7 * 24 * time.Hour
	v.Fit = true
	for _, r := range ranges {
		if r.Name == q.Get("range") {
			v.Range, d, v.Fit = r.Name, r.D, false
		}
	}
	v.Since = v.Now.Add(-d)
	return v
}

// filter is the store's filter of v, with limit.
func (v view) filter(limit int) store.Filter {
	return store.Filter{Test: v.Test, Agent: v.Agent, Server: v.Server, Since: v.Since, Limit: limit}
}

// query is v as a query string, with the range r.
func (v view) query(r string) string {
	q := url.Values{}
	q.Set("range", r)
	for k, x := range map[string]string{"test": v.Test, "agent": v.Agent, "server": v.Server} {
		if x != "" {
			q.Set(k, x)
		}
	}
	return q.Encode()
}

// rangeLink is one of the range links.
type rangeLink struct {
	Name, Query string
	Current     bool
}

// testRow is a test, its last result (nil: none yet) and, on an agent's
// page, its next scheduled run.
type testRow struct {
	Name string
	Last *store.Result
	Next nextRun
}

// overviewData is the overview's template data.
type overviewData struct {
	Title  string
	View   view
	Ranges []rangeLink
	Query  string // the current view's query, for /live
	CSRF   string
	CanRun bool
	// Scheduled: the tests are the agent's, with their next runs.
	Scheduled bool
	Running   string
	Tests     []testRow
	Charts    []chart
	Recent    []store.Result
	Latest    string // the newest result's ID, "" if none
	Pending   int    // results waiting for the remote store (Config.Pending)
}

func (s *server) overview(w http.ResponseWriter, r *http.Request) {
	d, err := s.overviewData(r.Context(), s.viewOf(r.URL.Query()))
	if err != nil {
		s.fail(w, r, "reading the overview", err)
		return
	}
	s.page(w, r, "overview.html", d)
}

// live is the overview's changing part alone, which the page's script
// fetches again when a result arrives.
func (s *server) live(w http.ResponseWriter, r *http.Request) {
	d, err := s.overviewData(r.Context(), s.viewOf(r.URL.Query()))
	if err != nil {
		s.fail(w, r, "reading the overview", err)
		return
	}
	s.page(w, r, "live", d)
}

func (s *server) overviewData(ctx context.Context, v view) (*overviewData, error) {
	d := &overviewData{Title: s.cfg.Title, View: v, Query: v.query(v.Range), CSRF: s.csrf.token, CanRun: s.cfg.Agent != nil, Scheduled: s.agentTests(v)}
	for _, r := range ranges {
		d.Ranges = append(d.Ranges, rangeLink{Name: r.Name, Query: v.query(r.Name), Current: r.Name == v.Range})
	}
	var err error
	if d.Tests, err = s.tests(ctx, v); err != nil {
		return nil, err
	}
	if s.cfg.Agent != nil {
		d.Running = s.cfg.Agent.Running()
	}
	if s.cfg.Pending != nil {
		d.Pending = s.cfg.Pending()
	}
	if d.Recent, err = s.cfg.Store.List(ctx, v.filter(recentRows)); err != nil {
		return nil, err
	}
	if len(d.Recent) > 0 {
		d.Latest = d.Recent[0].ID
	}
	if d.Charts, err = s.charts(ctx, v); err != nil {
		return nil, err
	}
	return d, nil
}

// agentTests: the overview of v lists the agent's configured tests (with
// their next runs), not those of the latest results.
func (s *server) agentTests(v view) bool {
	return s.cfg.Agent != nil && v.Agent == "" && v.Server == ""
}

// tests are the agent's configured tests with their last results (of any
// time: a test that has not run for a month still shows its last); without
// an agent, the tests of the latest results in range.
func (s *server) tests(ctx context.Context, v view) ([]testRow, error) {
	if s.agentTests(v) {
		var rows []testRow
		next, running := s.cfg.Agent.NextRuns(), s.cfg.Agent.Running()
		for _, name := range s.cfg.Agent.Tests() {
			if v.Test != "" && name != v.Test {
				continue
			}
			last, err := s.cfg.Store.List(ctx, store.Filter{Test: name, Limit: 1})
			if err != nil {
				return nil, err
			}
			row := testRow{Name: name, Next: nextRunOf(next[name], v.Now, name == running)}
			if len(last) > 0 {
				row.Last = &last[0]
			}
			rows = append(rows, row)
		}
		return rows, nil
	}
	// maxScan bounds what a fleet's page reads to find its tests' last
	// results; a test with none among them is not listed.
	const maxScan = 1000
	latest, err := s.cfg.Store.List(ctx, v.filter(maxScan))
	if err != nil {
		return nil, err
	}
	var rows []testRow
	seen := map[string]bool{}
	for i := range latest {
		name := latest[i].Test
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		rows = append(rows, testRow{Name: name, Last: &latest[i]})
	}
	return rows, nil
}
