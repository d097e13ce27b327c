package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Repeat is a --repeat run: complete tests in a row, each kept in full,
// and their aggregate. Its document is
//
//	{"Runs": [each run's document, in order], "Aggregate": {...}}
//
// where a run's document is OB-UDPST's (or a Bidirectional's pair), and
// Aggregate counts the runs (requested, run, completed, failed), lists
// each run's ErrorStatus and messages, and gives per direction the median,
// minimum, maximum and spread (maximum - minimum) of each figure over the
// completed runs (see completed and figures). A run that failed stays in
// Runs and in the counts; only its missing figures are not in the
// statistics.
type Repeat struct {
	requested   int
	pause       time.Duration
	runs        []Result
	interrupted bool
}

// NewRepeat returns the Repeat of a run of requested tests with pause
// between them.
func NewRepeat(requested int, pause time.Duration) *Repeat {
	return &Repeat{requested: requested, pause: pause}
}

// Add appends a finished test.
func (r *Repeat) Add(res Result) { r.runs = append(r.runs, res) }

// Interrupt records that the run was interrupted between two tests (in
// the pause), so that the tests not run are not taken for a complete run.
func (r *Repeat) Interrupt() { r.interrupted = true }

// ErrorStatus is the worst (largest) ErrorStatus of the runs, so a failed
// run (50 and above) makes it an error; 255 (interrupted) when the run was
// interrupted between tests or ran none.
func (r *Repeat) ErrorStatus() int {
	s := 0
	for _, res := range r.runs {
		s = max(s, res.ErrorStatus())
	}
	if r.interrupted || len(r.runs) == 0 {
		s = StatusGeneral
	}
	return s
}

// Document is the whole run's JSON document in format f.
func (r *Repeat) Document(f Format) []byte {
	return append(render(r.tree(f), f == FormatJSONFormatted), '\n')
}

func (r *Repeat) tree(f Format) *jobj {
	top := &jobj{}
	runs := jarr{}
	for _, res := range r.runs {
		runs = append(runs, res.tree(f))
	}
	top.add("Runs", runs)
	top.add("Aggregate", r.aggregate())
	return top
}

// stat is one figure's statistics over the completed runs.
type stat struct {
	n                int
	median, min, max float64
}

// newStat computes the statistics of v (not empty). The median of an even
// count is the mean of the two middle values.
func newStat(v []float64) stat {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return stat{n: n, median: med, min: s[0], max: s[n-1]}
}

func (s stat) spread() float64 { return s.max - s.min }

// dirStats are one direction's statistics, by figure.
type dirStats struct {
	upstream bool
	runs     int // completed runs that measured the direction
	figs     [numFigures]*stat
}

// stats are the per-direction statistics, upstream first, of every
// direction a run measured (known), over the completed runs.
func (r *Repeat) stats() []dirStats {
	var out []dirStats
	for _, up := range []bool{true, false} {
		seen := false
		var vals [numFigures][]float64
		runs := 0
		for _, res := range r.runs {
			ok := completed(res)
			for _, d := range res.directions() {
				if !d.known || d.upstream != up {
					continue
				}
				seen = true
				if !ok {
					continue
				}
				runs++
				for i := range numFigures {
					if d.has[i] {
						vals[i] = append(vals[i], d.val[i])
					}
				}
			}
		}
		if !seen {
			continue
		}
		ds := dirStats{upstream: up, runs: runs}
		for i := range numFigures {
			if len(vals[i]) > 0 {
				s := newStat(vals[i])
				ds.figs[i] = &s
			}
		}
		out = append(out, ds)
	}
	return out
}

// counts are the runs that completed and failed.
func (r *Repeat) counts() (done, failed int) {
	for _, res := range r.runs {
		if completed(res) {
			done++
		} else {
			failed++
		}
	}
	return done, failed
}

func (r *Repeat) aggregate() *jobj {
	o := &jobj{}
	done, failed := r.counts()
	o.int("RunsRequested", int64(r.requested))
	o.int("Runs", int64(len(r.runs)))
	o.int("RunsCompleted", int64(done))
	o.int("RunsFailed", int64(failed))
	o.flag("Interrupted", r.interrupted || len(r.runs) < r.requested)
	o.num("PauseSeconds", r.pause.Seconds(), precDelay)
	o.int("ErrorStatus", int64(r.ErrorStatus()))
	list := jarr{}
	for i, res := range r.runs {
		e := &jobj{}
		e.int("Run", int64(i+1))
		e.int("ErrorStatus", int64(res.ErrorStatus()))
		e.flag("Completed", completed(res))
		e.str("ErrorMessage", res.problem())
		list = append(list, e)
	}
	o.add("RunStatus", list)
	for _, ds := range r.stats() {
		d := o.obj(direction(ds.upstream))
		d.int("Runs", int64(ds.runs))
		for i, s := range ds.figs {
			if s == nil {
				continue
			}
			p := precPercent
			if figureInfo[i].delay {
				p = precDelay
			}
			f := d.obj(figureInfo[i].key)
			f.num("Median", s.median, p)
			f.num("Min", s.min, p)
			f.num("Max", s.max, p)
			f.num("Spread", s.spread(), p)
		}
	}
	return o
}

func direction(up bool) string {
	if up {
		return "Upstream"
	}
	return "Downstream"
}

// WriteTable writes the text table that ends a --repeat run: a line with
// the counts, a row per run and direction, the rows of the statistics, and
// a line per failed run with its messages.
func (r *Repeat) WriteTable(w io.Writer) error {
	done, failed := r.counts()
	var present [numFigures]bool
	for _, res := range r.runs {
		for _, d := range res.directions() {
			for i := range numFigures {
				present[i] = present[i] || d.has[i]
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Repeat: %d of %d runs, %d completed, %d failed; each run's last mode: Max and Summary in Mbps(L3/IP), delay variation and Min RTT in ms\n",
		len(r.runs), r.requested, done, failed)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"Run", "Direction", "Status"}
	for i := range numFigures {
		if present[i] {
			head = append(head, figureInfo[i].label)
		}
	}
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	row(head...)
	value := func(i int, v float64, digits int) string {
		if figureInfo[i].delay {
			return fmt.Sprintf("%.*f", digits, 1000*v)
		}
		return fmt.Sprintf("%.2f", v)
	}
	for n, res := range r.runs {
		ok := completed(res)
		status := fmt.Sprint(res.ErrorStatus())
		if !ok {
			status += " failed"
		}
		for _, d := range res.directions() {
			dir := "-"
			if d.known {
				dir = direction(d.upstream)
			}
			cells := []string{fmt.Sprint(n + 1), dir, status}
			for i := range numFigures {
				switch {
				case !present[i]:
					continue
				case d.has[i]:
					cells = append(cells, value(i, d.val[i], 0))
				default:
					cells = append(cells, "-")
				}
			}
			row(cells...)
		}
	}
	for _, ds := range r.stats() {
		for _, st := range []struct {
			name string
			v    func(s *stat) float64
		}{
			{"median", func(s *stat) float64 { return s.median }},
			{"min", func(s *stat) float64 { return s.min }},
			{"max", func(s *stat) float64 { return s.max }},
			{"spread", (*stat).spread},
		} {
			cells := []string{st.name, direction(ds.upstream), fmt.Sprintf("%d runs", ds.runs)}
			for i := range numFigures {
				switch {
				case !present[i]:
					continue
				case ds.figs[i] != nil:
					cells = append(cells, value(i, st.v(ds.figs[i]), 1))
				default:
					cells = append(cells, "-")
				}
			}
			row(cells...)
		}
	}
	tw.Flush()
	for n, res := range r.runs {
		if !completed(res) {
			fmt.Fprintf(&b, "Run %d failed, ErrorStatus %d: %s\n", n+1, res.ErrorStatus(), res.problem())
		}
	}
	if r.interrupted || len(r.runs) < r.requested {
		fmt.Fprintf(&b, "Interrupted: %d of %d runs not run\n", r.requested-len(r.runs), r.requested)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
