//go:build !small

package web

import (
	"context"
	"slices"
	"strings"

	"github.com/udpstp/udpstp/store"
)

// The fleet page's enrolled probes (docs/web.md, "Fleet"): a collector's
// store keeps the probes it enrolled (store.Probes), and the page names
// those without results in the range, silent or never heard from, and
// which are revoked. A store without them (an agent's spool, a fake)
// lists none and the page is as before.

// enrolledLister is the part of store.Probes the page reads, asked of the
// store at run time.
type enrolledLister interface {
	EnrolledProbes(ctx context.Context) ([]store.Probe, error)
}

// silentShown bounds the list of probes without results in the range:
// a fleet's page, not its inventory (`udpstp collector probes` lists
// them all).
const silentShown = 100

// enrolledData is what the page shows of the enrolled probes: how many
// are enrolled (0: none, or a store that keeps none; with an agent's
// filter, that one), those without
// results in the range, most recently heard from first, and how many
// more there are than silentShown.
type enrolledData struct {
	Enrolled int
	Silent   []store.Probe
	More     int
}

// enrolled reads the store's enrolled probes, marks the revoked ones
// among the probe rows shown, and lists the probes v's range has no
// result of (only v.Agent with an agent's filter).
func (s *server) enrolled(ctx context.Context, v view, rows []probeRow) (enrolledData, error) {
	var d enrolledData
	l, ok := s.cfg.Store.(enrolledLister)
	if !ok {
		return d, nil
	}
	ps, err := l.EnrolledProbes(ctx)
	if err != nil {
		return d, err
	}
	at := make(map[string]int, len(ps))
	for i, p := range ps {
		at[p.Name] = i
	}
	for i := range rows {
		if j, ok := at[rows[i].Agent]; ok {
			rows[i].Revoked = ps[j].Revoked
		}
	}
	for _, p := range ps {
		if v.Agent != "" && p.Name != v.Agent {
			continue
		}
		d.Enrolled++
		if p.Last.IsZero() || p.Last.Before(v.Since) {
			d.Silent = append(d.Silent, p)
		}
	}
	// Most recently heard from first; those never heard from last.
	slices.SortStableFunc(d.Silent, func(a, b store.Probe) int {
		if c := b.Last.Compare(a.Last); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	if n := len(d.Silent); n > silentShown {
		d.Silent, d.More = d.Silent[:silentShown], n-silentShown
	}
	return d, nil
}
