//go:build !small

package web

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/udpstp/udpstp/store"
)

// fleetData is the fleet page's template data.
type fleetData struct {
	Title   string
	View    view
	Ranges  []rangeLink
	Servers []serverRow
	Agents  []probeRow // the page of probes shown
	Probes  probePage
	// Enrolled: a collector's enrolled probes (enrolled.go).
	Enrolled enrolledData
	Buckets  []string // the capacity buckets' labels
}

// A fleet has thousands of probes: the page lists probesShown of them,
// the most recently active first, and the next ones a link further; each
// with its last probeRecent results and missed schedules, read for all
// the probes shown in one query each (not one per probe).
const (
	probesShown = 50
	probeRecent = 5
)

// probeRow is a probe's summary, its last results and its last missed
// schedules (when, and why in Warning).
type probeRow struct {
	store.AgentSummary
	Recent []store.Result
	Slots  []store.Result
	// Revoked: when its enrolment was revoked (enrolled.go); zero for
	// one in force or a store that keeps none.
	Revoked time.Time
}

// probePage is where the probes shown sit in the list: First to Last
// (from 1) of Total; Newer and Older are the queries of the pages beside
// ("" for none).
type probePage struct {
	First, Last, Total int
	Newer, Older       string
}

// serverRow is a server's summary, laid out.
type serverRow struct {
	store.ServerSummary
	Mix  []mixPart // the status mix, as parts of a bar
	Hist []bar     // the capacity distribution
}

type mixPart struct {
	Status  store.Status
	N       int
	X, W    float64 // in percent of the bar
	Percent string
}

type bar struct {
	Label string
	N     int
	X, W  float64
	Y, H  float64 // in the histogram's units (histW x histH)
}

const histW, histH = 240, 40

// statuses orders the status mix.
var statuses = []store.Status{store.StatusOK, store.StatusWarning, store.StatusError, store.StatusMissed}

func (s *server) fleet(w http.ResponseWriter, r *http.Request) {
	v := s.viewOf(r.URL.Query())
	f, err := s.cfg.Store.Fleet(r.Context(), store.Filter{Since: v.Since, Test: v.Test, Agent: v.Agent, Server: v.Server})
	if err != nil {
		s.fail(w, r, "reading the fleet", err)
		return
	}
	d := fleetData{Title: s.cfg.Title, View: v, Buckets: bucketLabels()}
	from, _ := strconv.Atoi(r.URL.Query().Get("probes"))
	if d.Agents, d.Probes, err = s.probes(r, v, f.Agents, from); err != nil {
		s.fail(w, r, "reading the probes' results", err)
		return
	}
	if d.Enrolled, err = s.enrolled(r.Context(), v, d.Agents); err != nil {
		s.fail(w, r, "reading the enrolled probes", err)
		return
	}
	for _, rg := range ranges {
		d.Ranges = append(d.Ranges, rangeLink{Name: rg.Name, Query: v.query(rg.Name), Current: rg.Name == v.Range})
	}
	for _, sv := range f.Servers {
		d.Servers = append(d.Servers, layServer(sv))
	}
	s.page(w, r, "fleet.html", d)
}

// probes lays out the page of probes from the from-th (from 0) of the
// most recently active, with their last results and missed schedules.
func (s *server) probes(r *http.Request, v view, all []store.AgentSummary, from int) ([]probeRow, probePage, error) {
	agents := slices.Clone(all)
	slices.SortStableFunc(agents, func(a, b store.AgentSummary) int {
		if c := b.Last.Compare(a.Last); c != 0 {
			return c
		}
		return strings.Compare(a.Agent, b.Agent)
	})
	from = max(0, min(from, len(agents)-1))
	to := min(from+probesShown, len(agents))
	pg := probePage{Total: len(agents)}
	if len(agents) == 0 {
		return nil, pg, nil
	}
	pg.First, pg.Last = from+1, to
	if from > 0 {
		pg.Newer = v.query(v.Range) + "&probes=" + strconv.Itoa(max(0, from-probesShown))
	}
	if to < len(agents) {
		pg.Older = v.query(v.Range) + "&probes=" + strconv.Itoa(to)
	}
	rows := make([]probeRow, 0, to-from)
	idx := map[string]int{}
	var names, missed []string
	for _, a := range agents[from:to] {
		idx[a.Agent] = len(rows)
		rows = append(rows, probeRow{AgentSummary: a})
		names = append(names, a.Agent)
		if a.Missed > 0 {
			missed = append(missed, a.Agent)
		}
	}
	f := v.filter(0)
	f.Agents, f.PerAgent = names, probeRecent
	recent, err := s.cfg.Store.List(r.Context(), f)
	if err != nil {
		return nil, pg, err
	}
	for _, res := range recent {
		if i, ok := idx[res.Agent]; ok {
			rows[i].Recent = append(rows[i].Recent, res)
		}
	}
	if len(missed) == 0 {
		return rows, pg, nil
	}
	f.Agents, f.Status = missed, store.StatusMissed
	slots, err := s.cfg.Store.List(r.Context(), f)
	if err != nil {
		return nil, pg, err
	}
	for _, res := range slots {
		if i, ok := idx[res.Agent]; ok {
			rows[i].Slots = append(rows[i].Slots, res)
		}
	}
	return rows, pg, nil
}

// bucketLabels names CapacityEdges' buckets: "10-25", ..., "10000+".
func bucketLabels() []string {
	e := store.CapacityEdges
	var ls []string
	for i := range e {
		if i+1 < len(e) {
			ls = append(ls, ftoa(e[i])+"–"+ftoa(e[i+1]))
		} else {
			ls = append(ls, ftoa(e[i])+"+")
		}
	}
	return ls
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func layServer(sv store.ServerSummary) serverRow {
	row := serverRow{ServerSummary: sv}
	total := 0
	for _, st := range statuses {
		total += sv.ByStatus[st]
	}
	x := 0.0
	for _, st := range statuses {
		n := sv.ByStatus[st]
		if n == 0 || total == 0 {
			continue
		}
		w := 100 * float64(n) / float64(total)
		row.Mix = append(row.Mix, mixPart{Status: st, N: n, X: x, W: w, Percent: strconv.FormatFloat(w, 'f', 0, 64) + "%"})
		x += w
	}
	most := 0
	for _, n := range sv.Capacity {
		most = max(most, n)
	}
	labels := bucketLabels()
	bw := float64(histW) / float64(len(store.CapacityEdges))
	for i := range store.CapacityEdges {
		n := 0
		if i < len(sv.Capacity) {
			n = sv.Capacity[i]
		}
		h := 0.0
		if most > 0 {
			h = float64(histH) * float64(n) / float64(most)
		}
		row.Hist = append(row.Hist, bar{Label: labels[i], N: n, X: float64(i) * bw, W: bw - 1, Y: histH - h, H: h})
	}
	return row
}
