//go:build !small

package web

import (
	"net/http"
	"strconv"

	"github.com/udpstp/udpstp/store"
)

// fleetData is the fleet page's template data.
type fleetData struct {
	Title   string
	View    view
	Ranges  []rangeLink
	Servers []serverRow
	Agents  []store.AgentSummary
	Buckets []string // the capacity buckets' labels
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
	d := fleetData{Title: s.cfg.Title, View: v, Agents: f.Agents, Buckets: bucketLabels()}
	for _, rg := range ranges {
		d.Ranges = append(d.Ranges, rangeLink{Name: rg.Name, Query: v.query(rg.Name), Current: rg.Name == v.Range})
	}
	for _, sv := range f.Servers {
		d.Servers = append(d.Servers, layServer(sv))
	}
	s.page(w, r, "fleet.html", d)
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
