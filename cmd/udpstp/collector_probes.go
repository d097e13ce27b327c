//go:build !small

package main

// `udpstp collector probes`: the enrolled probes, which are silent since
// when and which are revoked (docs/fleet.md, "Which probes: enrolled,
// silent, revoked").

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/store"
)

// probeRow is an enrolled probe as --json prints it; a time it does not
// have is null. SilentS is the whole seconds since its last result, or
// since its enrolment if it never uploaded one.
type probeRow struct {
	Name     string     `json:"name"`
	Enrolled time.Time  `json:"enrolled"`
	Revoked  *time.Time `json:"revoked"`
	Last     *time.Time `json:"last_result"`
	SilentS  int64      `json:"silent_s"`
}

func probeRowOf(p store.Probe, now time.Time) probeRow {
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		u := t.UTC()
		return &u
	}
	return probeRow{Name: p.Name, Enrolled: p.Enrolled.UTC(), Revoked: opt(p.Revoked), Last: opt(p.Last),
		SilentS: int64(max(0, now.Sub(p.SilentSince())) / time.Second)}
}

// collectorProbes is `udpstp collector probes`: it opens the store as a
// reader (store.OpenReader), as history does, and writes nothing.
func collectorProbes(c *cli.Context) error {
	if c.Args().Present() {
		return configError("collector probes: unexpected argument %q", c.Args().First())
	}
	if err := required(c, "store"); err != nil {
		return err
	}
	st, p, err := openProbes(c, "collector probes", store.OpenReader)
	if err != nil {
		return err
	}
	defer st.Close()
	ps, err := p.EnrolledProbes(c.Context)
	if err != nil {
		return cli.Exit("collector probes: "+err.Error(), exitInit)
	}
	now := time.Now()
	if c.Bool("json") {
		return writeProbesJSON(c.App.Writer, ps, now)
	}
	return writeProbesTable(c.App.Writer, ps, now)
}

func writeProbesJSON(w io.Writer, ps []store.Probe, now time.Time) error {
	rows := make([]probeRow, 0, len(ps))
	for _, p := range ps {
		rows = append(rows, probeRowOf(p, now))
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeProbesTable is the list for people, the times in UTC to the
// minute as history's table has them.
func writeProbesTable(w io.Writer, ps []store.Probe, now time.Time) error {
	at := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tENROLLED (UTC)\tREVOKED (UTC)\tLAST RESULT (UTC)\tSILENT FOR")
	for _, p := range ps {
		last := at(p.Last)
		if p.Last.IsZero() {
			last = "never"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, at(p.Enrolled), at(p.Revoked), last, silentText(now.Sub(p.SilentSince())))
	}
	return tw.Flush()
}

// silentText is a silence, rounded down: 2d03h, 5h07m, 12m.
func silentText(d time.Duration) string {
	d = max(0, d).Truncate(time.Minute)
	day := 24 * time.Hour
	switch {
	case d >= day:
		return fmt.Sprintf("%dd%02dh", d/day, d%day/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}
