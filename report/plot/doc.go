package plot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/udpstp/udpstp/report/resultdoc"
)

// Kind is what a result file holds.
type Kind int

const (
	// Single is one test's document, OB-UDPST's or udpstp's.
	Single Kind = iota
	// Bidirectional is --bidirectional's pair: {"Upstream": document,
	// "Downstream": document, "udpstp": {"Bidirectional": ...}}.
	Bidirectional
	// Repeat is --repeat's {"Runs": [document or pair, ...], "Aggregate"}.
	Repeat
)

// Doc is a result file: one test, a pair of tests run at once, or the
// tests of --repeat, each run a test or a pair.
type Doc struct {
	Kind      Kind
	Runs      []Run
	Requested int // --repeat's RunsRequested; len(Runs) otherwise
}

// Run is one run of a Doc: its tests (one, or a pair's upstream then
// downstream half), or why it has none to draw.
type Run struct {
	N     int       // from 1
	Tests []*Result // upstream first; nil when no half has Sub-Intervals
	// Offset is a pair's downstream half's start after its upstream
	// half's, in seconds (udpstp's StartOffset), so both share one time
	// axis; IdleSubIntervals is how many Sub-Intervals of each half were
	// the idle baseline (at the starting row) before both searched.
	Offset           float64
	IdleSubIntervals int
	Status           int    // the run's worst ErrorStatus
	Problem          string // why a test or half has nothing to draw, "" if every one has
}

// ReadDocFile reads the result file at path as ReadDoc does.
func ReadDocFile(path string) (*Doc, error) { return readFile(path, ReadDoc) }

// ReadDoc reads a result file of any kind: what Read reads, a
// --bidirectional pair or a --repeat document. A pair or a run with
// nothing to draw in one half is drawn with the other; a document with
// nothing to draw at all is ErrNoResults.
func ReadDoc(rd io.Reader) (*Doc, error) {
	b, err := io.ReadAll(io.LimitReader(rd, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(b)
	if len(b) <= MaxFileSize && len(trimmed) > 0 && trimmed[0] == '{' {
		top, err := resultdoc.Decode(trimmed)
		switch {
		case err != nil:
		case top.Kind() == resultdoc.Repeat:
			return readRepeat(top)
		case top.Kind() == resultdoc.Bidirectional:
			run, err := readPair(top)
			if err != nil {
				return nil, err
			}
			run.N = 1
			return &Doc{Kind: Bidirectional, Runs: []Run{run}, Requested: 1}, nil
		}
	}
	r, err := Read(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return &Doc{Kind: Single, Runs: []Run{{N: 1, Tests: []*Result{r}, Status: r.Status}}, Requested: 1}, nil
}

func readRepeat(top *resultdoc.Document) (*Doc, error) {
	d := &Doc{Kind: Repeat, Requested: len(top.Runs)}
	if top.Aggregate != nil {
		d.Requested = max(finiteInt(top.Aggregate.RunsRequested), len(top.Runs))
	}
	drawable := false
	for i, raw := range top.Runs {
		var run Run
		inner, err := resultdoc.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("run %d: not a valid test result: %w", i+1, jsonError(err))
		}
		if inner.Upstream != nil || inner.Downstream != nil {
			r, err := readPair(inner)
			if err != nil && !errors.Is(err, ErrNoResults) {
				return nil, fmt.Errorf("run %d: %w", i+1, err)
			}
			run = r
			if err != nil {
				run.Problem = err.Error()
			}
		} else {
			run = readOne(raw)
		}
		run.N = i + 1
		drawable = drawable || len(run.Tests) > 0
		d.Runs = append(d.Runs, run)
	}
	if !drawable {
		return nil, fmt.Errorf("%w: none of the %d runs has any", ErrNoResults, len(top.Runs))
	}
	return d, nil
}

// readOne reads one test's document of a repeat; a test that failed
// before any Sub-Interval is a run without tests, its status kept.
func readOne(raw json.RawMessage) Run {
	r, err := Read(bytes.NewReader(raw))
	if err != nil {
		run := Run{Problem: err.Error()}
		if st, ok := resultdoc.ErrorStatusOf(raw); ok {
			run.Status = finiteInt(st)
		}
		return run
	}
	return Run{Tests: []*Result{r}, Status: r.Status}
}

// readPair reads a --bidirectional pair; a half without Sub-Intervals is
// named in Problem, and a pair with neither is ErrNoResults.
func readPair(top *resultdoc.Document) (Run, error) {
	var run Run
	if b := top.Udpstp; b != nil && b.Bidirectional != nil {
		run.Offset = finite(b.Bidirectional.StartOffset)
		run.IdleSubIntervals = finiteInt(b.Bidirectional.IdleSubIntervals)
	}
	var problems []string
	for _, h := range []struct {
		name string
		raw  json.RawMessage
	}{{"Upstream", top.Upstream}, {"Downstream", top.Downstream}} {
		if h.raw == nil {
			problems = append(problems, h.name+": missing")
			continue
		}
		half := readOne(h.raw)
		run.Status = max(run.Status, half.Status)
		if half.Problem != "" {
			problems = append(problems, h.name+": "+half.Problem)
			continue
		}
		r := half.Tests[0]
		r.Upstream = h.name == "Upstream" // as the pair names it
		run.Tests = append(run.Tests, r)
	}
	run.Problem = strings.Join(problems, "; ")
	if len(run.Tests) == 0 {
		return run, fmt.Errorf("%w: neither half of the --bidirectional pair has any (%s)", ErrNoResults, run.Problem)
	}
	return run, nil
}
